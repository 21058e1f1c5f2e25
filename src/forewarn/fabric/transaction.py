"""One change in the making: the records a transition writes, over the state it builds on.

A ``Tx`` collects new and removed records on top of the *working* state; the lifecycle
rules (``rules.py``) fill it, ``rules.seal`` turns it into ``Changes``, and the pipeline
writes them and only then makes them visible.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from forewarn.fabric.errors import NotFoundError
from forewarn.fabric.planner import OperationRequest
from forewarn.fabric.records import (
    EventRecord,
    HistoryEntry,
    OperationRecord,
    RolloutRecord,
    ScopeState,
)
from forewarn.fabric.state import FabricState

__all__ = ["Tx", "find_event", "request_options"]


@dataclass
class Tx:
    """The records one transition writes at ``at``, over the working ``state``."""

    at: float
    state: FabricState
    operations: dict[str, OperationRecord] = field(default_factory=dict)
    events: dict[str, EventRecord] = field(default_factory=dict)
    removed: dict[str, EventRecord] = field(default_factory=dict)
    rollouts: dict[str, RolloutRecord] = field(default_factory=dict)
    scopes: dict[str, ScopeState] = field(default_factory=dict)
    deleted_vms: list[str] = field(default_factory=list)
    finished_rollout_batches: list[str] = field(default_factory=list)
    history: list[HistoryEntry] = field(default_factory=list)
    #: Drop every operation, event, rollout and deleted VM first (``rules.reset_fleet``).
    reset: bool = False

    def current(self, event_id: str) -> EventRecord | None:
        """An event as this transition leaves it (None: removed, or never was)."""
        if event_id in self.removed:
            return None
        return self.events.get(event_id) or self.state.events.get(event_id)

    def operation(self, operation_id: str) -> OperationRecord:
        """An operation as this transition leaves it."""
        return self.operations.get(operation_id) or self.state.operations[operation_id]

    def is_deleted(self, vm_name: str) -> bool:
        """True when the VM is gone, or this transition deletes it."""
        return vm_name in self.state.deleted or vm_name in self.deleted_vms

    def log(self, kind: str, **fields: Any) -> None:
        detail = fields.pop("detail", {})
        self.history.append(HistoryEntry(at=self.at, kind=kind, detail=detail, **fields))

    def log_event(self, kind: str, event: EventRecord, **detail: Any) -> None:
        self.log(
            kind,
            scope_id=event.scope_id,
            operation_id=event.operation_id,
            event_id=event.id,
            detail=detail,
        )


def find_event(events: dict[str, EventRecord], event_id: str) -> EventRecord:
    """A live event by id, ignoring case."""
    found = events.get(event_id) or events.get(event_id.upper())
    if found is None:
        raise NotFoundError(f"no live event with id {event_id!r}")
    return found


def request_options(request: OperationRequest) -> dict[str, Any]:
    """What a rollout repeats of its request for every batch."""
    options: dict[str, Any] = {}
    if request.notice_seconds is not None:
        options["notice_seconds"] = request.notice_seconds
    if request.description is not None:
        options["description"] = request.description
    if request.duration_seconds is not None:
        options["duration_seconds"] = request.duration_seconds
    return options
