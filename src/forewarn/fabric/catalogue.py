"""What each platform or user operation turns into: event type, notice, impact.

Every number here is the faithful default (CONTRACT section 4); the time scale divides
them all when the server runs faster than real time.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from forewarn.contract import EventSource, EventType

__all__ = ["CATALOGUE", "OperationKind", "OperationSpec", "spec_for"]

MINUTE = 60
DAY = 24 * 60 * MINUTE


class OperationKind(StrEnum):
    """Operations a user or the platform can perform on VMs."""

    USER_REBOOT = "user-reboot"
    USER_REDEPLOY = "user-redeploy"
    LIVE_MIGRATION = "live-migration"
    HOST_UPDATE = "host-update"
    PLATFORM_REBOOT = "platform-reboot"
    PLATFORM_REDEPLOY = "platform-redeploy"
    DEGRADED_HARDWARE = "degraded-hardware"
    HARDWARE_FAILURE = "hardware-failure"
    SPOT_EVICTION = "spot-eviction"
    SCALE_IN = "scale-in"
    REIMAGE = "reimage"


@dataclass(frozen=True, slots=True)
class OperationSpec:
    """The event an operation raises and how it unfolds.

    ``notice`` is NotBefore - creation; ``wire_duration`` is DurationInSeconds; ``impact``
    is how long the VM is actually down; ``hold`` is how long the event stays Started
    before it is removed.
    """

    kind: OperationKind
    event_type: EventType
    source: EventSource
    description: str
    notice: float
    wire_duration: int
    impact: float
    hold: float
    created_started: bool = False
    deletes_vm: bool = False
    needs_spot: bool = False
    needs_scale_set: bool = False
    min_notice: float | None = None
    max_notice: float | None = None
    #: A reimage: notice only when the scope's OS image notification is on.
    os_image: bool = False

    @property
    def minimum_notice(self) -> float:
        """The least notice an override may give (the default notice unless stated)."""
        return self.notice if self.min_notice is None else self.min_notice

    @property
    def user_initiated(self) -> bool:
        """User operations count against the preview limit and can be auto-approved."""
        return self.source is EventSource.USER


_MAINTENANCE = "Host server is undergoing maintenance."
_P = EventSource.PLATFORM
_U = EventSource.USER

CATALOGUE: dict[OperationKind, OperationSpec] = {
    s.kind: s
    for s in (
        OperationSpec(
            OperationKind.USER_REBOOT,
            EventType.REBOOT,
            _U,
            "Virtual machine is going to be restarted as requested by authorized user.",
            notice=15 * MINUTE,
            wire_duration=-1,
            impact=2 * MINUTE,
            hold=10 * MINUTE,
        ),
        OperationSpec(
            OperationKind.USER_REDEPLOY,
            EventType.REDEPLOY,
            _U,
            "Virtual machine is going to be redeployed as requested by authorized user.",
            notice=10 * MINUTE,
            wire_duration=-1,
            impact=5 * MINUTE,
            hold=10 * MINUTE,
        ),
        OperationSpec(
            OperationKind.LIVE_MIGRATION,
            EventType.FREEZE,
            _P,
            "Virtual machine is being paused because of a memory-preserving Live Migration "
            "operation.",
            notice=15 * MINUTE,
            wire_duration=5,
            impact=5,
            hold=5 * MINUTE,
        ),
        OperationSpec(
            OperationKind.HOST_UPDATE,
            EventType.FREEZE,
            _P,
            _MAINTENANCE,
            notice=15 * MINUTE,
            wire_duration=9,
            impact=9,
            hold=5 * MINUTE,
        ),
        OperationSpec(
            OperationKind.PLATFORM_REBOOT,
            EventType.REBOOT,
            _P,
            _MAINTENANCE,
            notice=15 * MINUTE,
            wire_duration=-1,
            impact=3 * MINUTE,
            hold=10 * MINUTE,
        ),
        OperationSpec(
            OperationKind.PLATFORM_REDEPLOY,
            EventType.REDEPLOY,
            _P,
            _MAINTENANCE,
            notice=10 * MINUTE,
            wire_duration=-1,
            impact=5 * MINUTE,
            hold=10 * MINUTE,
        ),
        OperationSpec(
            OperationKind.DEGRADED_HARDWARE,
            EventType.REDEPLOY,
            _P,
            "Host server hardware is degraded and is predicted to fail.",
            notice=3 * DAY,
            wire_duration=-1,
            impact=5 * MINUTE,
            hold=10 * MINUTE,
            min_notice=10 * MINUTE,
            max_notice=7 * DAY,
        ),
        OperationSpec(
            OperationKind.HARDWARE_FAILURE,
            EventType.REDEPLOY,
            _P,
            "Host server is undergoing an emergency repair.",
            notice=0,
            wire_duration=-1,
            impact=5 * MINUTE,
            hold=10 * MINUTE,
            created_started=True,
        ),
        OperationSpec(
            OperationKind.SPOT_EVICTION,
            EventType.PREEMPT,
            _P,
            "Spot virtual machine is being evicted.",
            notice=30,
            wire_duration=-1,
            impact=0,
            hold=MINUTE,
            deletes_vm=True,
            needs_spot=True,
        ),
        OperationSpec(
            OperationKind.SCALE_IN,
            EventType.TERMINATE,
            _U,
            "Virtual machine is being deleted.",
            notice=5 * MINUTE,
            wire_duration=-1,
            impact=0,
            hold=MINUTE,
            deletes_vm=True,
            needs_scale_set=True,
        ),
        OperationSpec(
            OperationKind.REIMAGE,
            EventType.REBOOT,
            _U,
            "Virtual machine is going to be reimaged as requested by authorized user.",
            notice=15 * MINUTE,
            wire_duration=-1,
            impact=5 * MINUTE,
            hold=10 * MINUTE,
            os_image=True,
        ),
    )
}


def spec_for(kind: str) -> OperationSpec:
    """The spec of ``kind``, or ValueError listing the known kinds."""
    try:
        return CATALOGUE[OperationKind(kind)]
    except ValueError:
        known = ", ".join(k.value for k in OperationKind)
        raise ValueError(f"unknown operation {kind!r}; known: {known}") from None
