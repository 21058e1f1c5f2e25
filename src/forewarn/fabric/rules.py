"""The lifecycle rules: functions that build one change on a ``Tx``.

They create operations and their per-scope events, approve, start, remove and cancel
them, settle operations and move rollouts on, and let deleted VMs leave the events they
were in. Each reads the working state through the transaction and writes only to it;
``seal`` finishes a transaction into the ``Changes`` the pipeline writes. The ``Fabric``
(``engine.py``) decides when a rule applies and commits what it built.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

import msgspec

from forewarn.contract import EventStatus, EventType
from forewarn.fabric import region
from forewarn.fabric.catalogue import OperationSpec, spec_for
from forewarn.fabric.errors import Conflict, EventNotVisible, InvalidOperation
from forewarn.fabric.lifecycle import EventPhase, Step, next_event_phase, next_operation_state
from forewarn.fabric.planner import OperationRequest, Plan, group_key, plan_request
from forewarn.fabric.platform import Platform
from forewarn.fabric.records import (
    RESET_KIND,
    Changes,
    EventRecord,
    OperationRecord,
    OperationState,
    RolloutRecord,
)
from forewarn.fabric.scope_view import ScopeView
from forewarn.fabric.state import FabricState
from forewarn.fabric.transaction import Tx, request_options
from forewarn.fleet.topology import Topology

__all__ = [
    "Platform",
    "approve",
    "drop_event",
    "finish_operation",
    "relayed_ids",
    "remove_events",
    "reset_fleet",
    "seal",
    "settle_operation",
    "start_if_approved",
    "start_operation",
    "submit",
    "visible_ids",
]


# ------------------------------------------------------------------ operations


def submit(p: Platform, tx: Tx, request: OperationRequest) -> OperationRecord:
    """Plan ``request`` and create its (first) operation, and its rollout if it rolls."""
    state = tx.state
    plan = plan_request(
        request, p.topology, state.deleted.__contains__,
        lambda spec, vms: p.min_notice(state, spec, vms), time_scale=p.config.time_scale,
    )  # fmt: skip
    _check_in_progress(tx, plan)
    _check_preview_limit(p, tx, plan)
    if plan.region is not None:
        return region.start(p, tx, plan, create_operation)
    rollout_id = None
    if plan.rolling:
        rollout_id = p.fresh_id("rollout", state.rollouts)
        rollout = RolloutRecord(
            id=rollout_id,
            kind=plan.spec.kind.value,
            scope_id=request.scope or "",
            batches=plan.batches,
            next_batch=1,
            current_operation=None,
            options=request_options(request),
        )
        tx.rollouts[rollout_id] = rollout
        tx.log(
            "rollout.created",
            scope_id=rollout.scope_id,
            detail={"id": rollout_id, "kind": rollout.kind, "batches": len(plan.batches)},
        )
    op = create_operation(p, tx, plan.spec, request, plan.batches[0], rollout_id)
    if rollout_id is not None:
        tx.rollouts[rollout_id] = msgspec.structs.replace(
            tx.rollouts[rollout_id], current_operation=op.id
        )
    return op


def _check_in_progress(tx: Tx, plan: Plan) -> None:
    """Azure refuses a user operation on a VM while another one is in progress (409):
    scheduled, or started and its impact not over yet."""
    if not plan.spec.user_initiated:
        return
    state = tx.state
    for name in plan.batches[0]:
        op_id = state.user_ops.get(name)
        op = state.active.get(op_id) if op_id is not None else None
        if op is None:
            continue
        if op.started_at is not None and tx.at >= op.started_at + op.impact_seconds:
            continue
        events = ", ".join(op.event_ids) or "no event (no notice)"
        raise Conflict(
            f"VM {name!r} already has a {op.kind} in progress (operation {op.id}, "
            f"event {events}); wait until it is over"
        )


def _check_preview_limit(p: Platform, tx: Tx, plan: Plan) -> None:
    if not plan.spec.user_initiated:
        return
    limit = p.config.preview_user_operation_limit
    for scope_id in {p.topology.vms[n].scope_id for n in plan.batches[0]}:
        if not tx.state.policy(scope_id).preview_user_operation_limit:
            continue
        active = tx.state.scope_user_operations(scope_id)
        if active >= limit:
            raise InvalidOperation(
                f"scope {scope_id!r} already has {active} user-initiated operations in "
                f"progress (preview limit {limit})"
            )


def create_operation(
    p: Platform,
    tx: Tx,
    spec: OperationSpec,
    request: OperationRequest,
    vm_names: tuple[str, ...],
    rollout_id: str | None,
) -> OperationRecord:
    """An operation on ``vm_names`` and one event per scope, host and update domain of
    the VMs that get notice; started at once when nothing waits for it."""
    now = tx.at
    topology = p.topology
    vms = [topology.vms[n] for n in vm_names if n not in tx.state.deleted]
    notice = request.notice_seconds
    if notice is None:
        notice = p.default_notice(tx.state, spec, vms)
    groups: dict[tuple[str, str, int], list[str]] = {}
    silent: list[str] = []
    quiet: dict[str, bool] = {}  # scope → no notice (decided once a scope: a region's
    for vm in vms:  # wave holds VMs of thousands)
        no_notice = quiet.get(vm.scope_id)
        if no_notice is None:
            policy = tx.state.policy(vm.scope_id)
            no_notice = quiet[vm.scope_id] = (
                not p.enabled(vm.scope_id, now)
                or (spec.needs_scale_set and not policy.terminate_notification)
                or (spec.os_image and not policy.os_image_notification)
            )
        if no_notice:
            silent.append(vm.name)
        else:
            groups.setdefault(group_key(vm), []).append(vm.name)
    auto = (
        spec.user_initiated
        and bool(groups)
        and not spec.os_image
        and all(tx.state.policy(key[0]).auto_approves(spec.event_type) for key in groups)
    )
    starts_now = spec.created_started or auto or not groups
    op = OperationRecord(
        id=p.fresh_id("op", tx.state.operations),
        kind=spec.kind.value,
        target=request.target,
        vms=tuple(vm.name for vm in vms),
        state=OperationState.SCHEDULED,
        created_at=now,
        not_before=now + (0.0 if starts_now else notice),
        impact_seconds=p.config.scaled(spec.impact),
        hold_seconds=p.config.scaled(spec.hold),
        deletes_vms=spec.deletes_vm,
        rollout_id=rollout_id,
        via=request.via,
    )
    # DurationInSeconds is what the platform announces, not scaled: client policies
    # ("approve a Freeze under 9 s") must decide as they would in production.
    duration = spec.wire_duration if request.duration_seconds is None else request.duration_seconds
    description = spec.description if request.description is None else request.description
    events = []
    status = EventStatus(next_event_phase(EventPhase.NEW, Step.CREATE).value)
    for (scope_id, _host, _ud), names in groups.items():
        event = EventRecord(
            id=p.new_id(),
            operation_id=op.id,
            scope_id=scope_id,
            event_type=spec.event_type,
            source=spec.source,
            status=status,
            resources=tuple(names),
            description=description,
            duration_seconds=duration,
            created_at=now,
            not_before=op.not_before,
        )
        tx.events[event.id] = event
        events.append(event)
    op = msgspec.structs.replace(
        op, event_ids=tuple(e.id for e in events), unnotified=tuple(silent)
    )
    if starts_now:
        down: list[EventRecord] = []
    else:
        down = [e for e in events if _takes_all_down(tx, e)]
    tx.operations[op.id] = op
    tx.log(
        "operation.created",
        operation_id=op.id,
        detail={
            "kind": op.kind,
            "target": op.target,
            "vms": list(op.vms),
            "not_before": op.not_before,
            "no_notice": silent,
            "via": request.via,
        },
    )
    for event in events:
        tx.log_event(
            "event.scheduled", event, type=event.event_type.value, resources=list(event.resources)
        )
    for event in down:  # allInstancesDown: nobody is left to approve it
        approved = msgspec.structs.replace(
            event, approved_by="platform", approved_at=now, approved_via="policy"
        )
        tx.events[event.id] = approved
        tx.log_event("event.approved", approved, by="platform", via="policy")
    if down:
        start_if_approved(tx, tx.operations[op.id])
    if starts_now:
        reason = "auto_approved" if auto else ("no_notice" if not groups else "immediate")
        start_operation(tx, op, reason=reason)
    return tx.operations[op.id]


def start_operation(tx: Tx, op: OperationRecord, reason: str) -> None:
    """Start an operation and every event it still has."""
    op = tx.operations.get(op.id, op)
    state = next_operation_state(op.state.value, Step.START, f"operation {op.id}")
    op = msgspec.structs.replace(op, state=OperationState(state), started_at=tx.at)
    tx.operations[op.id] = op
    tx.log("operation.started", operation_id=op.id, detail={"reason": reason})
    started_as: dict[EventStatus, EventStatus] = {}  # (every event of a wave starts alike)
    for event_id in op.event_ids:
        event = tx.current(event_id)
        if event is None:
            continue
        status = started_as.get(event.status)
        if status is None:
            where = f"event {event.id}"
            phase = next_event_phase(EventPhase(event.status.value), Step.START, where)
            status = started_as[event.status] = EventStatus(phase.value)
        started = msgspec.structs.replace(event, status=status, started_at=tx.at)
        tx.events[event.id] = started
        tx.log_event("event.started", event, reason=reason)


def start_if_approved(tx: Tx, op: OperationRecord) -> None:
    """Start a Scheduled operation once every event it still has is approved. Deletes
    are coupled: Terminate events of a scope with the same NotBefore must all be
    approved, and then their operations start together."""
    op = tx.operations.get(op.id, op)
    if op.state is not OperationState.SCHEDULED or not _all_approved(tx, op):
        return
    coupled = _coupled_deletes(tx, op)
    if any(not _all_approved(tx, other) for other in coupled):
        return  # a pending unapproved Terminate holds this one
    start_operation(tx, op, reason="approved")
    for other in coupled:
        start_operation(tx, other, reason="approved")


def _live_events(tx: Tx, op: OperationRecord) -> list[EventRecord]:
    return [e for e in (tx.current(eid) for eid in op.event_ids) if e is not None]


def _all_approved(tx: Tx, op: OperationRecord) -> bool:
    live = _live_events(tx, op)
    return bool(live) and all(e.approved_by for e in live)


def _coupled_deletes(tx: Tx, op: OperationRecord) -> list[OperationRecord]:
    """Other Scheduled operations with a Terminate event in the same scope as one of
    ``op``'s Terminate events and the same NotBefore."""
    mine = [e for e in _live_events(tx, op) if e.event_type is EventType.TERMINATE]
    if not mine:
        return []
    out: dict[str, OperationRecord] = {}
    for scope_id in {e.scope_id for e in mine}:
        ids = set(tx.state.by_scope[scope_id]) | {
            i for i, e in tx.events.items() if e.scope_id == scope_id
        }
        for event_id in ids:
            event = tx.current(event_id)
            if (
                event is None
                or event.operation_id == op.id
                or event.event_type is not EventType.TERMINATE
                or event.status is not EventStatus.SCHEDULED
                or event.not_before != op.not_before
            ):
                continue
            other = tx.operation(event.operation_id)
            if other.state is OperationState.SCHEDULED:
                out[other.id] = other
    return list(out.values())


#: Event types whose impact takes a VM down (a Freeze only pauses it).
_DOWN = frozenset({EventType.REBOOT, EventType.REDEPLOY, EventType.TERMINATE, EventType.PREEMPT})


def _takes_all_down(tx: Tx, event: EventRecord) -> bool:
    """``allInstancesDown``: the event's scope has it on and the event lists every
    live VM of the scope."""
    if (
        event.event_type not in _DOWN
        or not tx.state.policy(event.scope_id).auto_approve_all_instances_down
    ):
        return False
    scope = tx.state.topology.scopes[event.scope_id]
    live = {n for n in scope.vm_names if not tx.is_deleted(n)}
    return live <= set(event.resources)


def finish_operation(p: Platform, tx: Tx, op: OperationRecord) -> None:
    """A started operation's impact is over: its events go, then it settles."""
    live = [e for e in (tx.current(eid) for eid in op.event_ids) if e is not None]
    remove_events(tx, live, "event.completed")
    settle_operation(p, tx, op)


def settle_operation(p: Platform, tx: Tx, op: OperationRecord) -> None:
    """Close an operation once none of its events is left; then move its rollout on."""
    op = tx.operations.get(op.id, op)
    if any(tx.current(eid) is not None for eid in op.event_ids):
        return
    step = Step.FINISH if op.state is OperationState.STARTED else Step.CANCEL
    state = OperationState(next_operation_state(op.state.value, step, f"operation {op.id}"))
    tx.operations[op.id] = msgspec.structs.replace(op, state=state, ended_at=tx.at)
    tx.log(f"operation.{state.value}", operation_id=op.id)
    if state is OperationState.COMPLETED and op.deletes_vms:
        for name in op.vms:
            if name in op.spared_vms or tx.is_deleted(name):
                continue
            tx.deleted_vms.append(name)
            tx.log(
                "vm.deleted",
                scope_id=p.topology.vms[name].scope_id,
                operation_id=op.id,
                detail={"vm": name},
            )
    if op.rollout_id is not None:
        tx.finished_rollout_batches.append(op.rollout_id)


# ---------------------------------------------------------------------- events


def visible_ids(
    view: ScopeView,
    vm_name: str,
    event_ids: Iterable[str],
    event_types: Collection[EventType] | None,
) -> list[str]:
    """The events a VM approves, each once: all must be visible to it in ``view`` (of
    the types its api-version shows), or ``EventNotVisible`` and none count."""
    visible = {
        e.event_id.upper(): e.event_id
        for e in view.events_for(vm_name)
        if event_types is None or e.event_type in event_types
    }
    wanted: list[str] = []
    for raw in event_ids:
        event_id = visible.get(raw.upper())
        if event_id is None:
            shown = raw if len(raw) <= 64 else raw[:64] + "..."
            raise EventNotVisible(f"EventId {shown} is not a scheduled event of this VM")
        if event_id not in wanted:
            wanted.append(event_id)
    return wanted


def relayed_ids(
    topology: Topology, state: FabricState, vm_name: str, event_ids: Iterable[str]
) -> list[str]:
    """Of an approval a follower relayed, the events that still count: live, in the VM's
    scope, and listing it where each VM sees only its own events."""
    vm = topology.vms.get(vm_name)
    if vm is None:
        return []
    return [
        i for i in event_ids
        if (e := state.events.get(i)) is not None
        and e.scope_id == vm.scope_id
        and (not state.policy(e.scope_id).per_vm_visibility or vm_name in e.resources)
    ]  # fmt: skip


def approve(tx: Tx, event_ids: list[str], by: str, via: str = "control") -> list[EventRecord]:
    """Approve live events (already approved or started ones stay as they are), and start
    each operation all of whose events are approved; returns the events. ``via`` is where
    the approval came from (``endpoint``, ``arm``, ``control``, ``policy``): every
    ``event.approved`` entry says it, as every ``operation.created`` says its request's."""
    out = []
    for event_id in event_ids:
        event = tx.state.events.get(event_id)
        if event is None:  # removed by a change still being written: nothing to do
            continue
        if event.status is EventStatus.SCHEDULED and event.approved_by is None:
            event = msgspec.structs.replace(
                event, approved_by=by, approved_at=tx.at, approved_via=via
            )
            tx.events[event.id] = event
            tx.log_event("event.approved", event, by=by, via=via)
        out.append(event)
    for op_id in dict.fromkeys(e.operation_id for e in out):
        start_if_approved(tx, tx.state.operations[op_id])
    return out


def remove_events(tx: Tx, events: list[EventRecord], kind: str) -> None:
    """Remove events (canceled if Scheduled, completed if Started)."""
    for event in events:
        step = Step.CANCEL if event.status is EventStatus.SCHEDULED else Step.REMOVE
        next_event_phase(EventPhase(event.status.value), step, f"event {event.id}")
        tx.events.pop(event.id, None)
        tx.removed[event.id] = event
        tx.log_event(kind, event)


def drop_event(p: Platform, tx: Tx, event: EventRecord, kind: str) -> None:
    """Remove one event of an operation before its end: its VMs are spared."""
    remove_events(tx, [event], kind)
    op = tx.operation(event.operation_id)
    spared = tuple(dict.fromkeys((*op.spared_vms, *event.resources)))
    op = msgspec.structs.replace(op, spared_vms=spared)
    tx.operations[op.id] = op
    settle_operation(p, tx, op)
    if tx.operations[op.id].state is OperationState.SCHEDULED:
        start_if_approved(tx, op)


# ----------------------------------------------------------------------- reset


def reset_fleet(tx: Tx) -> dict[str, Any]:
    """Back to a fresh fleet for the next drill: every event disappears (the scope
    documents change, so the pipeline gives each a higher incarnation), operations and
    rollouts are forgotten, deleted VMs are back. The history stays, with one entry
    that says what went; returns that entry's detail."""
    state = tx.state
    tx.reset = True
    tx.removed.update(state.events)
    detail: dict[str, Any] = {
        "events": len(state.events),
        "operations": len(state.operations),
        "live_operations": len(state.active),
        "rollouts": len(state.rollouts),
        "restored_vms": sorted(state.deleted),
    }
    tx.log(RESET_KIND, detail=detail)
    return detail


# --------------------------------------------------------------------- sealing


def seal(p: Platform, tx: Tx, clock_position: float | None = None) -> Changes:
    """Finish a transition: deleted VMs leave their events, rollouts move on (last, once
    every VM this transition deletes is known, so a new batch never lists a VM that dies
    at the same instant); returns what to write."""
    _forget_deleted_vms(p, tx)
    for rollout_id in dict.fromkeys(tx.finished_rollout_batches):
        _advance_rollout(p, tx, rollout_id)
    return Changes(
        reset=tx.reset,
        operations=list(tx.operations.values()),
        events=list(tx.events.values()),
        removed_events=list(tx.removed),
        rollouts=list(tx.rollouts.values()),
        scopes=list(tx.scopes.values()),
        deleted_vms=list(tx.deleted_vms),
        history=tx.history,
        clock_position=clock_position,
    )


def _advance_rollout(p: Platform, tx: Tx, rollout_id: str) -> None:
    rollout = tx.rollouts.get(rollout_id) or tx.state.rollouts[rollout_id]
    if rollout.region:
        region.advance(p, tx, rollout, create_operation)
        return
    batches = rollout.batches
    index = rollout.next_batch
    while index < len(batches):
        names = tuple(n for n in batches[index] if not tx.is_deleted(n))
        index += 1
        if names:
            request = OperationRequest(kind=rollout.kind, scope=rollout.scope_id, **rollout.options)
            op = create_operation(p, tx, spec_for(rollout.kind), request, names, rollout.id)
            tx.rollouts[rollout.id] = msgspec.structs.replace(
                rollout, next_batch=index, current_operation=op.id
            )
            return
    tx.rollouts[rollout.id] = msgspec.structs.replace(
        rollout, next_batch=index, current_operation=None, done=True
    )
    tx.log("rollout.completed", scope_id=rollout.scope_id, detail={"id": rollout.id})


def _forget_deleted_vms(p: Platform, tx: Tx) -> None:
    """A deleted VM leaves every other event of its scope (an incarnation step); an
    event left with no VM is removed, and its operation no longer waits for it."""
    done = 0
    while done < len(tx.deleted_vms):
        name = tx.deleted_vms[done]
        done += 1
        scope_id = p.topology.vms[name].scope_id
        candidates = dict(tx.state.by_scope[scope_id])
        candidates.update((k, e) for k, e in tx.events.items() if e.scope_id == scope_id)
        for event_id in candidates:
            event = tx.current(event_id)
            if event is None or name not in event.resources:
                continue
            remaining = tuple(r for r in event.resources if r != name)
            if not remaining:
                drop_event(p, tx, event, "event.canceled")
                continue
            tx.events[event.id] = msgspec.structs.replace(event, resources=remaining)
            tx.log_event("event.resources_changed", event, removed=[name])
