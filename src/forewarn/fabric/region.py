"""Region rollouts: a platform update over the whole fleet, wave by wave.

A wave is the next ``wave_hosts`` hosts of one update domain in the topology's walk
(``fleet.walk``): update domain by update domain, host by host, so no scope ever loses two
update domains at once. The rollout keeps a cursor, never the names still to come: each
advance costs O(wave), planned or written. Deleted VMs are skipped as each wave is cut.
The lifecycle rules (``rules.py``) call in here and hand over how they make an operation.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from forewarn.fabric.catalogue import OperationSpec, spec_for
from forewarn.fabric.errors import Conflict
from forewarn.fabric.planner import OperationRequest, Plan, next_live_wave
from forewarn.fabric.platform import Platform
from forewarn.fabric.records import OperationRecord, RolloutRecord
from forewarn.fabric.transaction import Tx, request_options

__all__ = ["CreateOperation", "advance", "start"]

#: ``rules.create_operation``: an operation on some VMs, with its events.
CreateOperation = Callable[
    [Platform, Tx, OperationSpec, OperationRequest, tuple[str, ...], str | None],
    OperationRecord,
]


def start(p: Platform, tx: Tx, plan: Plan, create: CreateOperation) -> OperationRecord:
    """A region rollout and its first wave's operation (one at a time: Azure never rolls
    two platform updates over a region at once)."""
    start = plan.region
    assert start is not None
    live = [r for r in tx.state.rollouts.values() if r.region and not r.done]
    if live:
        other = live[0]
        raise Conflict(
            f"a region rollout is already under way ({other.id}, {other.kind}, wave "
            f"{other.next_batch} of {other.waves}); wait until it is over"
        )
    rollout = RolloutRecord(
        id=p.fresh_id("rollout", tx.state.rollouts),
        kind=plan.spec.kind.value,
        scope_id="",
        batches=(),
        next_batch=start.begun,
        current_operation=None,
        options=request_options(plan.request),
        region=True,
        wave_hosts=start.wave_hosts,
        cursor=start.cursor,
        waves=start.waves,
        fleet_vms=start.fleet_vms,
    )
    tx.log(
        "rollout.created",
        detail={"id": rollout.id, "kind": rollout.kind, "region": True,
                "waves": rollout.waves, "wave_hosts": rollout.wave_hosts},
    )  # fmt: skip
    return _begin_wave(p, tx, rollout, plan.batches[0], start.update_domain, create)


def _begin_wave(
    p: Platform,
    tx: Tx,
    rollout: RolloutRecord,
    names: tuple[str, ...],
    update_domain: int,
    create: CreateOperation,
) -> OperationRecord:
    """The operation of a region rollout's wave ``rollout.next_batch`` (1-based)."""
    request = OperationRequest(kind=rollout.kind, region=True, **rollout.options)
    op = create(p, tx, spec_for(rollout.kind), request, names, rollout.id)
    tx.rollouts[rollout.id] = msgspec.structs.replace(
        rollout, current_operation=op.id, events=rollout.events + len(op.event_ids)
    )
    tx.log(
        "rollout.wave",
        operation_id=op.id,
        detail={"id": rollout.id, "wave": rollout.next_batch, "waves": rollout.waves,
                "update_domain": update_domain, "vms": len(op.vms)},
    )  # fmt: skip
    return op


def advance(p: Platform, tx: Tx, rollout: RolloutRecord, create: CreateOperation) -> None:
    """The next wave with a live VM, from the rollout's cursor: O(wave)."""
    vms = p.topology.vms
    if rollout.cursor is not None and len(vms) == rollout.fleet_vms:
        names, taken, domain, cursor = next_live_wave(
            p.topology.update_domain_walk(), rollout.cursor, rollout.wave_hosts,
            vms.name_at, tx.is_deleted,
        )  # fmt: skip
        moved = msgspec.structs.replace(
            rollout, cursor=cursor, next_batch=rollout.next_batch + taken
        )
        if names:
            _begin_wave(p, tx, moved, names, domain, create)
            return
        rollout = moved
    elif rollout.cursor is not None:  # restarted on another fleet: its walk is another
        tx.log(
            "rollout.abandoned",
            detail={"id": rollout.id, "reason": f"the fleet has {len(vms)} VMs, the "
                    f"rollout was planned on {rollout.fleet_vms}"},
        )  # fmt: skip
    tx.rollouts[rollout.id] = msgspec.structs.replace(
        rollout, cursor=None, current_operation=None, done=True
    )
    tx.log("rollout.completed", detail={"id": rollout.id, "region": True})
