"""What the dashboard is sent: a whole snapshot, then changes and once-a-second ticks.

The snapshot is everything the page draws first (the fleet rolled up to one row per
region and scope kind with its worst scopes: ``kind_rollup``; live events and operations,
recent history, the operation catalogue); a change message is what one published change
altered; a tick (``hub.py``) carries the clock, the totals of the kinds whose totals
changed and the scopes where a VM's poll or state moved. Nothing in either is a row per
VM, nor one per scope: a kind's scopes and a scope's VMs come on demand, a page at a
time, so a million-VM fleet's snapshot is the size of a 100,000-VM one's, and a VM that
polls resends nothing of the fleet.
"""

from __future__ import annotations

from typing import Any

import msgspec

from forewarn import __version__
from forewarn.control.dashboard.kind_rollup import KindRollup
from forewarn.control.json_views import event_out, operation_out
from forewarn.fabric import CATALOGUE, Changes, EventRecord, Fabric, HistoryEntry, OperationState

__all__ = ["change_message", "event_view", "snapshot"]

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


def snapshot(
    fabric: Fabric,
    *,
    kinds: list[KindRollup],
    history: list[HistoryEntry],
    scenarios: list[str] | None,
    resets: list[float] | None = None,
) -> dict[str, Any]:
    """Everything the page draws first, as of now (``kinds``: the fleet rolled up,
    ``kind_rollup``); ``resets``: when each drill began (the fleet's resets, oldest
    first: the page shows the drill since the last one)."""
    scale = fabric.config.scaled
    return {
        "version": __version__,
        "now": fabric.clock.now(),
        "virtual": fabric.clock.is_virtual,
        "time_scale": fabric.config.time_scale,
        "leading": fabric.leading,
        "vms": len(fabric.topology.vms),
        "kinds": kinds,
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
