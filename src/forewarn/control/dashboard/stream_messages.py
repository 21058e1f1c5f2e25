"""What the dashboard is sent: a whole snapshot, then changes and once-a-second ticks.

The snapshot is everything the page draws (fleet, live events and operations, recent
history, the operation catalogue); a change message is what one published change
altered; a tick carries the clock and only the VM poll times and states that moved.
Kept compact: a 1,000-VM fleet's snapshot is some 100 KB and a tick a few KB. A fleet
polling every second moves every VM's poll time every tick, so a tick gives those as one
byte per VM in the snapshot's order (``PollPacker``): 13 KB for 10,000 VMs, not 300 KB for
each of a hundred streams every second.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from forewarn import __version__
from forewarn.control.json_views import event_out, operation_out
from forewarn.fabric import CATALOGUE, Changes, EventRecord, Fabric, HistoryEntry, OperationState

__all__ = [
    "AGE_STEP",
    "PollPacker",
    "VmRow",
    "change_message",
    "event_view",
    "snapshot",
    "vm_rows",
]

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


class VmRow(msgspec.Struct, gc=False):
    """One VM as the page draws it. A Struct the collector never walks (``gc=False``: only
    strings and numbers): a million dicts made at once set off collections that each walk
    every one made so far, so the payload cost grew faster than the fleet (14 x for 10 x
    the VMs, 100k to 1M); the JSON is the same."""

    name: str
    scope: str
    host: str
    ud: int
    status: str
    polled: float | None


def vm_rows(fabric: Fabric, statuses: dict[str, str], polls: dict[str, float]) -> list[VmRow]:
    """Every VM, where it runs, what is happening to it and when it last polled."""
    status, polled = statuses.get, polls.get
    return [
        VmRow(
            vm.name,
            vm.scope_id,
            vm.host,
            vm.update_domain,
            status(vm.name, "running"),
            polled(vm.name),
        )
        for vm in fabric.topology.vms.values()
    ]


#: A packed poll time is this many seconds before the tick's ``now`` per step.
AGE_STEP = 0.1
_OLDEST_STEP = 254  # byte 255: 25.4 s before ``now``; older poll times go by name


class PollPacker:
    """The poll times that moved, one byte per VM in ``order`` (the snapshot's): 0 when it
    did not move, else 1 + its age at ``now`` in ``AGE_STEP`` steps (a poll after ``now``:
    age 0). By name only those a byte cannot say (older than 25.4 s, e.g. from another
    front-end, or not in ``order``). Fed in slices, so that a fleet's pass can give the
    event loop back between them."""

    __slots__ = ("_ages", "_now", "_order", "by_name")

    def __init__(self, order: Mapping[str, int], now: float) -> None:
        self._order = order
        self._now = now
        self._ages = bytearray(len(order))
        self.by_name: dict[str, float] = {}

    def add_moved(self, polls: Iterable[tuple[str, float]], sent: dict[str, float]) -> None:
        """Pack each of ``polls`` whose time is not the one in ``sent``."""
        order, now, ages, by_name = self._order, self._now, self._ages, self.by_name
        for name, at in polls:
            if sent.get(name) == at:
                continue
            index = order.get(name)
            step = round((now - at) / AGE_STEP)
            if index is None or step > _OLDEST_STEP:
                by_name[name] = at
            else:
                ages[index] = 1 + max(step, 0)

    def packed(self) -> str:
        """The bytes, base64 ("" when no byte is set)."""
        return base64.b64encode(self._ages).decode() if any(self._ages) else ""


def snapshot(
    fabric: Fabric,
    *,
    polls: dict[str, float],
    history: list[HistoryEntry],
    scenarios: list[str] | None,
    resets: list[float] | None = None,
) -> dict[str, Any]:
    """Everything the page draws, as of now; ``resets``: when each drill began (the
    fleet's resets, oldest first: the page shows the drill since the last one)."""
    statuses = fabric.vm_statuses()
    scopes = [
        {
            "id": scope.id,
            "kind": scope.kind.value,
            "update_domains": scope.update_domains,
            "incarnation": fabric.view(scope.id).incarnation,
            "enabled": fabric.is_enabled(scope.id),
        }
        for scope in fabric.topology.scopes.values()
    ]
    scale = fabric.config.scaled
    return {
        "version": __version__,
        "now": fabric.clock.now(),
        "virtual": fabric.clock.is_virtual,
        "time_scale": fabric.config.time_scale,
        "leading": fabric.leading,
        "scopes": scopes,
        "hosts": sorted(fabric.topology.host_names()),
        "vms": vm_rows(fabric, statuses, polls),
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
