"""The public life of each published event, told by the fabric's observer hooks.

Azure publishes a scheduled event outside the VM at every state change, with two states
the VM never sees: Completed (removed after it ran) and Canceled. ``Ledger`` turns the
fabric's published changes into those ``Notice``s, for scopes whose policy publishes
them, tells its listeners (the Event Grid hub), and keeps one row per event for Resource
Graph (ended ones for ``retention`` seconds of platform time).
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from forewarn.contract import format_rfc1123
from forewarn.eventgrid.naming import ArmNames
from forewarn.fabric import Changes, EventRecord

__all__ = ["RETENTION_SECONDS", "Ledger", "Notice"]

#: How long Completed and Canceled rows stay in Resource Graph (platform seconds).
RETENTION_SECONDS = 7 * 24 * 3600.0


@dataclass(frozen=True, slots=True)
class Notice:
    """One public state of one event: what a delivery carries, what a row shows.

    ``id`` is the Event Grid event id: new for each state, the same on every redelivery."""

    id: str
    event_id: str
    scope_id: str
    arm_id: str
    location: str
    status: str
    event_type: str
    resources: tuple[str, ...]
    not_before: float | None
    description: str
    source: str
    duration_seconds: int
    at: float

    @property
    def ended(self) -> bool:
        return self.status in ("Completed", "Canceled")

    def properties(self) -> dict[str, Any]:
        """The event's fields as the VM reads them, with its public status."""
        return {
            "EventId": self.event_id,
            "EventStatus": self.status,
            "EventType": self.event_type,
            "ResourceType": "VirtualMachine",
            "Resources": list(self.resources),
            "NotBefore": "" if self.not_before is None else format_rfc1123(self.not_before),
            "Description": self.description,
            "EventSource": self.source,
            "DurationInSeconds": self.duration_seconds,
        }


Listener = Callable[[Notice], None]


class Ledger:
    """A ``FabricObserver``: notices for published scopes, and the rows they leave."""

    def __init__(
        self,
        names: ArmNames,
        now: Callable[[], float],
        enabled: Callable[[str], bool],
        *,
        retention: float = RETENTION_SECONDS,
    ) -> None:
        self.names = names
        self.now = now
        self.retention = retention
        #: Whether a scope's events are published (its durable policy, which the fleet
        #: file's ``event_grid`` starts and ARM may change): decided in one place.
        self.enabled = enabled
        self._live: dict[str, EventRecord] = {}
        self._rows: dict[str, Notice] = {}
        self._ended: deque[tuple[float, str]] = deque()
        self._listeners: list[Listener] = []

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def rows(self) -> list[Notice]:
        """Every published event's latest state, oldest change first."""
        self._expire()
        return sorted(self._rows.values(), key=lambda n: (n.at, n.event_id))

    # ------------------------------------------------------------- observer hooks

    def published(self, changes: Changes) -> None:
        if changes.reset:
            self._live.clear()
            for event_id in [i for i, n in self._rows.items() if not n.ended]:
                del self._rows[event_id]
        if not changes.events and not changes.removed_events:
            return
        ends = {
            e.event_id: e.kind.partition(".")[2]
            for e in changes.history
            if e.event_id is not None and e.kind in ("event.completed", "event.canceled")
        }
        for event in changes.events:
            before = self._live.get(event.id)
            self._live[event.id] = event
            if before is not None and (before.status, before.resources) == (
                event.status, event.resources
            ):  # fmt: skip
                continue  # an approval: no public change
            self._tell(event, event.status.value, event.not_before)
        for event_id in changes.removed_events:
            last = self._live.pop(event_id, None)
            if last is not None:
                how = "Canceled" if ends.get(event_id) == "canceled" else "Completed"
                self._tell(last, how, last.not_before if how == "Canceled" else None)

    def reloaded(self, events: Iterable[EventRecord]) -> None:
        self._live = {e.id: e for e in events}

    def approved(self, vm: str, event_ids: Sequence[str]) -> None:
        del vm, event_ids

    def closing(self) -> None:
        pass

    # -------------------------------------------------------------------- helpers

    def _tell(self, event: EventRecord, status: str, not_before: float | None) -> None:
        if not self.enabled(event.scope_id):
            return
        owner = self.names.owner(event.scope_id)
        if owner is None:
            return
        if status != "Scheduled":
            not_before = None if status != "Canceled" else not_before
        notice = Notice(
            id=str(uuid.uuid4()),
            event_id=event.id,
            scope_id=event.scope_id,
            arm_id=self.names.event_id(owner, event.id),
            location=self.names.location(event.scope_id),
            status=status,
            event_type=event.event_type.value,
            resources=event.resources,
            not_before=not_before,
            description=event.description,
            source=event.source.value,
            duration_seconds=event.duration_seconds,
            at=self.now(),
        )
        self._rows[event.id] = notice
        if notice.ended:
            self._ended.append((notice.at, event.id))
        for listener in self._listeners:
            listener(notice)

    def _expire(self) -> None:
        horizon = self.now() - self.retention
        while self._ended and self._ended[0][0] < horizon:
            _, event_id = self._ended.popleft()
            row = self._rows.get(event_id)
            if row is not None and row.ended and row.at < horizon:
                del self._rows[event_id]
