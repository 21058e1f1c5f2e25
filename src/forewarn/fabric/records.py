"""The platform's persisted state: operations, events, rollouts, scope counters, history.

Records are immutable msgspec Structs: the engine builds new ones, writes them to the
store, and only then makes them visible.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import msgspec

from forewarn.contract import EventSource, EventStatus, EventType, RenderableEvent
from forewarn.fleet.topology import ScopePolicy

__all__ = [
    "RESET_KIND",
    "Changes",
    "EventRecord",
    "HistoryEntry",
    "OperationRecord",
    "OperationState",
    "OutboxEntry",
    "RolloutRecord",
    "ScopeState",
    "Snapshot",
]


class OperationState(StrEnum):
    """Where an operation is in its life."""

    SCHEDULED = "scheduled"
    STARTED = "started"
    COMPLETED = "completed"
    CANCELED = "canceled"


class EventRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One event of one scope, as the platform keeps it."""

    id: str
    operation_id: str
    scope_id: str
    event_type: EventType
    source: EventSource
    status: EventStatus
    resources: tuple[str, ...]
    description: str
    duration_seconds: int
    created_at: float
    not_before: float
    approved_by: str | None = None
    approved_at: float | None = None
    started_at: float | None = None
    #: Where the approval came from: endpoint, arm, control, or policy.
    approved_via: str | None = None

    def renderable(self) -> RenderableEvent:
        """The wire view of this event."""
        return RenderableEvent(
            event_id=self.id,
            status=self.status,
            event_type=self.event_type,
            resources=self.resources,
            not_before=self.not_before,
            description=self.description,
            source=self.source.value,
            duration_seconds=self.duration_seconds,
        )


class OperationRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One atomic piece of work on some VMs; its events start together.

    ``spared_vms`` lists VMs whose event was canceled: the operation has no impact on them.
    ``unnotified`` lists VMs hit without notice (their scope's Scheduled Events were off).
    """

    id: str
    kind: str
    target: str
    vms: tuple[str, ...]
    state: OperationState
    created_at: float
    not_before: float
    impact_seconds: float
    hold_seconds: float
    deletes_vms: bool
    event_ids: tuple[str, ...] = ()
    spared_vms: tuple[str, ...] = ()
    unnotified: tuple[str, ...] = ()
    rollout_id: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    #: Where the operation was asked for: control (API, CLI, dashboard) or arm.
    via: str = "control"

    @property
    def remove_at(self) -> float | None:
        """When a Started operation's events disappear."""
        return None if self.started_at is None else self.started_at + self.hold_seconds


class RolloutRecord(msgspec.Struct, frozen=True, kw_only=True):
    """Platform maintenance walking update domains one batch at a time: a scope's (its
    ``batches`` of VM names) or, with ``region``, the whole fleet's in waves of at most
    ``wave_hosts`` hosts (``fleet.walk``).

    A region rollout stores no names: ``cursor`` is where its next wave begins in the
    walk the topology gives (None: no wave left), so each advance writes O(1) here and
    O(wave) in the wave's operation. ``next_batch`` counts the batches (waves) begun,
    ``waves`` is how many the walk takes, ``events`` how many events it has made,
    ``fleet_vms`` the size of the fleet it was planned on (a restart on another fleet
    ends it rather than walk a different order).
    """

    id: str
    kind: str
    scope_id: str
    batches: tuple[tuple[str, ...], ...]
    next_batch: int
    current_operation: str | None
    options: dict[str, Any]
    done: bool = False
    region: bool = False
    wave_hosts: int = 0
    cursor: tuple[int, int] | None = None
    waves: int = 0
    events: int = 0
    fleet_vms: int = 0

    @property
    def target(self) -> str:
        """What it walks, for listings: ``region`` or ``scope NAME``."""
        return "region" if self.region else f"scope {self.scope_id}"


class ScopeState(msgspec.Struct, frozen=True, kw_only=True):
    """The per-scope counters that must survive restarts, and the scope's policy once
    changed at run time (None: the fleet file's)."""

    scope_id: str
    incarnation: int = 1
    last_request_at: float | None = None
    policy: ScopePolicy | None = None


#: The history kind of a fleet reset (``Fabric.reset``): where the next drill begins.
RESET_KIND = "fleet.reset"


class HistoryEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One line of the append-only history; ``seq`` is assigned by the store."""

    at: float
    kind: str
    scope_id: str | None = None
    operation_id: str | None = None
    event_id: str | None = None
    detail: dict[str, Any] = {}
    seq: int = 0


class OutboxEntry(msgspec.Struct, frozen=True, kw_only=True):
    """A message a change owes to someone outside the fabric (an Event Grid notice),
    written in the change's own transaction: a crash never keeps the change and loses
    the message. Its reader deletes it once it has taken it over (``channel`` says whose
    it is; ``body`` is the reader's own encoding)."""

    id: str
    channel: str
    body: str


class Snapshot(msgspec.Struct, kw_only=True):
    """Everything the engine needs to resume after a restart."""

    operations: list[OperationRecord] = []
    events: list[EventRecord] = []
    rollouts: list[RolloutRecord] = []
    scopes: list[ScopeState] = []
    deleted_vms: list[str] = []


class Changes(msgspec.Struct, kw_only=True):
    """One atomic write: everything a single transition changed.

    ``clock_position`` is a virtual clock's new position, written before it is used.
    ``outbox`` holds the messages the change owes (``Fabric.owe``), written with it."""

    operations: list[OperationRecord] = []
    events: list[EventRecord] = []
    removed_events: list[str] = []
    rollouts: list[RolloutRecord] = []
    scopes: list[ScopeState] = []
    deleted_vms: list[str] = []
    history: list[HistoryEntry] = []
    clock_position: float | None = None
    reset: bool = False
    outbox: list[OutboxEntry] = []

    def empty(self) -> bool:
        """True when nothing would be written."""
        return not (
            self.reset
            or self.operations
            or self.events
            or self.removed_events
            or self.rollouts
            or self.scopes
            or self.deleted_vms
            or self.history
            or self.outbox
            or self.clock_position is not None
        )
