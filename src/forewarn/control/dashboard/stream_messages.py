"""What the dashboard is sent: a whole snapshot, then changes and once-a-second ticks.

The snapshot is everything the page draws first (the fleet rolled up to one row per
scope, live events and operations, recent history, the operation catalogue); a change
message is what one published change altered; a tick carries the clock, the counts of
the scopes whose counts changed and the scopes where a VM's poll or state moved (the page
asks again for the VMs of those it shows). Nothing in either is a row per VM: a scope's
VMs come on demand (``fleet_rollup``), so a million-VM fleet's snapshot is the size of
its scopes, and a VM that polls resends nothing of the fleet.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping
from typing import Any

import msgspec

from forewarn import __version__
from forewarn.control.dashboard.fleet_rollup import FleetTally, ScopeIndex
from forewarn.control.json_views import event_out, operation_out
from forewarn.fabric import CATALOGUE, Changes, EventRecord, Fabric, HistoryEntry, OperationState

__all__ = ["ScopeRow", "change_message", "event_view", "scope_rows", "snapshot"]

_LIVE = (OperationState.SCHEDULED, OperationState.STARTED)

#: Which targets each operation takes (the trigger form offers only those).
_TARGETS = {
    "user-reboot": ["vm"], "user-redeploy": ["vm"], "scale-in": ["vm"],
    "live-migration": ["vm", "host"], "degraded-hardware": ["vm", "host"],
    "hardware-failure": ["vm", "host"], "spot-eviction": ["vm", "host"],
    "host-update": ["vm", "host", "scope"], "platform-reboot": ["vm", "host", "scope"],
    "platform-redeploy": ["vm", "host", "scope"], "reimage": ["vm"],
}  # fmt: skip


def event_view(event: EventRecord) -> dict[str, Any]:
    """An event as the API shows it, with when it was approved."""
    out: dict[str, Any] = msgspec.to_builtins(event_out(event))
    out["approved_at"] = event.approved_at
    return out


def history_view(entries: list[HistoryEntry]) -> list[dict[str, Any]]:
    """History entries as plain JSON."""
    return [msgspec.to_builtins(e) for e in entries]


#: Poll times counted per turn of the event loop (a million VMs that poll are some 0.5 s).
COUNT_SLICE = 20_000


class ScopeRow(msgspec.Struct, gc=False):
    """One scope as the page rolls it up: where it is, and its VMs counted (a Struct: ten
    thousand of them are made and encoded for a million-VM fleet's snapshot)."""

    id: str
    region: str
    kind: str
    update_domains: int
    incarnation: int
    enabled: bool
    vms: int
    states: dict[str, int]
    polled: int
    silent: int


async def scope_rows(
    fabric: Fabric, index: ScopeIndex, polls: Mapping[str, float], statuses: Mapping[str, str]
) -> list[ScopeRow]:
    """Every scope, where it is and its VMs counted (``FleetTally``); the poll times
    ``COUNT_SLICE`` at a time, the event loop given back between."""
    tally = FleetTally(index, fabric.clock.now())
    items = iter(polls.items())
    while chunk := list(itertools.islice(items, COUNT_SLICE)):
        tally.add_polls(chunk)
        await asyncio.sleep(0)
    tally.add_statuses(statuses)
    where, view, enabled, count = index.where, fabric.view, fabric.is_enabled, tally.count
    rows = []
    for scope in fabric.topology.scopes.values():
        sid = scope.id
        region, kind = where(sid)
        states, polled, silent = count(sid)
        row = ScopeRow(sid, region, kind, scope.update_domains, view(sid).incarnation,
                       enabled(sid), len(scope.vm_names), states, polled, silent)  # fmt: skip
        rows.append(row)
    return rows


async def snapshot(
    fabric: Fabric,
    *,
    index: ScopeIndex,
    polls: dict[str, float],
    history: list[HistoryEntry],
    scenarios: list[str] | None,
    resets: list[float] | None = None,
) -> dict[str, Any]:
    """Everything the page draws first, as of now; ``resets``: when each drill began (the
    fleet's resets, oldest first: the page shows the drill since the last one)."""
    scale = fabric.config.scaled
    scopes = await scope_rows(fabric, index, polls, fabric.vm_statuses())
    return {
        "version": __version__,
        "now": fabric.clock.now(),
        "virtual": fabric.clock.is_virtual,
        "time_scale": fabric.config.time_scale,
        "leading": fabric.leading,
        "vms": len(fabric.topology.vms),
        "scopes": scopes,
        "events": [event_view(e) for e in fabric.events()],
        "operations": [
            msgspec.to_builtins(operation_out(op))
            for op in fabric.operations()
            if op.state in _LIVE
        ],
        "history": history_view(history),
        "catalogue": [
            {
                "kind": s.kind.value,
                "event_type": s.event_type.value,
                "notice_seconds": scale(s.notice),
                "targets": _TARGETS.get(s.kind.value, ["vm"]),
            }
            for s in CATALOGUE.values()
        ],
        "scenarios": scenarios,
        "resets": resets or [],
    }


def change_message(fabric: Fabric, changes: Changes) -> dict[str, Any] | None:
    """What one published change altered (None: bookkeeping the page does not show)."""
    if not (
        changes.events
        or changes.removed_events
        or changes.operations
        or changes.history
        or changes.deleted_vms
    ):
        return None
    # Incarnations from the change itself: asking the fabric for views here could fire
    # due timers from inside the publication of a change.
    scopes = [
        {"id": s.scope_id, "incarnation": s.incarnation, "enabled": fabric.is_enabled(s.scope_id)}
        for s in changes.scopes
    ]
    return {
        "events": [event_view(e) for e in changes.events],
        "removed": list(changes.removed_events),
        "operations": [msgspec.to_builtins(operation_out(op)) for op in changes.operations],
        "history": history_view(changes.history),
        "deleted": list(changes.deleted_vms),
        "scopes": scopes,
        "now": fabric.clock.now(),
    }
