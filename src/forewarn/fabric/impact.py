"""What a VM is going through: running, deleted, or an impact under way (the dashboard's
and the control API's VM status, ARM's power state), and the platform maintenance still
ahead of it (what ``performMaintenance`` may start now)."""

from __future__ import annotations

from collections.abc import Iterable

from forewarn.contract import EventSource, EventStatus
from forewarn.fabric.catalogue import spec_for
from forewarn.fabric.records import EventRecord
from forewarn.fabric.state import FabricState

__all__ = ["pending_maintenance", "vm_status", "vm_statuses"]

_IMPACT_STATUS = {
    "Freeze": "frozen",
    "Reboot": "rebooting",
    "Redeploy": "redeploying",
    "Preempt": "evicting",
    "Terminate": "terminating",
}


def vm_status(state: FabricState, vm_name: str, now: float) -> str:
    """``running``, ``deleted``, or the impact under way (``frozen``, ``rebooting``...)."""
    if vm_name in state.deleted:
        return "deleted"
    for op in state.started():
        if (
            op.started_at is not None
            and now < op.started_at + op.impact_seconds
            and vm_name in op.vms
            and vm_name not in op.spared_vms
        ):
            return _IMPACT_STATUS.get(spec_for(op.kind).event_type.value, "impacted")
    return "running"


def vm_statuses(state: FabricState, now: float) -> dict[str, str]:
    """Every VM that is not ``running``, with its ``vm_status``: one pass over the
    started operations (the dashboard asks about the whole fleet every second)."""
    out = dict.fromkeys(state.deleted, "deleted")
    for op in state.started():
        if op.started_at is None or now >= op.started_at + op.impact_seconds:
            continue
        status = _IMPACT_STATUS.get(spec_for(op.kind).event_type.value, "impacted")
        for name in op.vms:
            if name not in op.spared_vms:
                out.setdefault(name, status)
    return out


def pending_maintenance(events: Iterable[EventRecord], vm_name: str) -> EventRecord | None:
    """The platform maintenance still ahead of a VM (its platform-initiated event still
    Scheduled), which the user may start now (customer-initiated maintenance), or None."""
    for event in events:
        if (
            event.source is EventSource.PLATFORM
            and event.status is EventStatus.SCHEDULED
            and vm_name in event.resources
        ):
            return event
    return None
