"""The public life of each published event, told by the fabric's hooks.

Azure publishes a scheduled event outside the VM at every state change, with two states
the VM never sees: Completed (removed after it ran) and Canceled. ``Ledger`` turns each
change, as the fabric builds it, into those ``Notice``s, for scopes whose policy
publishes them (``owed``: the change's outbox, written in its transaction, so that no
crash keeps a change and loses its notices); once the change is durable and visible it
tells its listeners (the Event Grid hub) and keeps one row per event for Resource Graph
(ended ones for ``retention`` seconds of platform time).

What changed is read off the change and the live events before it, never off a memory
of its own: a restart, or a follower taking the lead, announces the first change of an
event loaded from the database as it would any other.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from forewarn.contract import format_rfc1123
from forewarn.eventgrid.naming import ArmNames
from forewarn.fabric import Changes, EventRecord, OutboxEntry

__all__ = ["CHANNEL", "RETENTION_SECONDS", "Ledger", "Notice", "notice_from_json", "notice_json"]

log = logging.getLogger(__name__)

#: The outbox channel of Event Grid's notices.
CHANNEL = "eventgrid"

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


def notice_json(notice: Notice) -> str:
    """A notice as the store keeps it (``notice_from_json`` reads it)."""
    return json.dumps(asdict(notice), separators=(",", ":"))


def notice_from_json(text: str) -> Notice:
    """A notice as ``notice_json`` wrote it (``ValueError``: not one)."""
    try:
        data = json.loads(text)
        return Notice(**{**data, "resources": tuple(data["resources"])})
    except (TypeError, KeyError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a kept notice: {exc}") from None


Listener = Callable[[Notice], None]


def _row_key(notice: Notice) -> tuple[float, str]:
    """The order of ``Ledger.rows``: oldest change first, then by event id."""
    return (notice.at, notice.event_id)


class Ledger:
    """A ``FabricObserver`` and ``Owing``: notices for published scopes, owed by the
    change that makes them, and the rows they leave."""

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
        self._rows: dict[str, Notice] = {}
        #: Whether ``_rows`` is in ``rows()``'s order (kept so while changes come in it).
        self._in_order = True
        self._ended: deque[tuple[float, str]] = deque()
        self._listeners: list[Listener] = []

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def rows(self) -> Iterator[Notice]:
        """Every published event's latest state, oldest change first: as kept (each
        change moves its row to the end) while changes come in that order, else sorted."""
        self._expire()
        if not self._in_order:
            ordered = sorted(self._rows.values(), key=_row_key)
            self._rows = {n.event_id: n for n in ordered}
            self._in_order = True
        return iter(self._rows.values())  # read at once, on the loop: nothing changes it meanwhile

    # ------------------------------------------------------------ the owed notices

    def owed(self, changes: Changes, live: Mapping[str, EventRecord]) -> list[OutboxEntry]:
        """The notices ``changes`` owes, each a public change of an event of a published
        scope against ``live`` (the events before it): a new or changed status or
        resources, a removal (Completed, or Canceled when the change says so)."""
        if not changes.events and not changes.removed_events:
            return []
        before: Mapping[str, EventRecord] = {} if changes.reset else live
        ends = {
            e.event_id: e.kind.partition(".")[2]
            for e in changes.history
            if e.event_id is not None and e.kind in ("event.completed", "event.canceled")
        }
        notices: list[Notice | None] = []
        for event in changes.events:
            last = before.get(event.id)
            if last is not None and (last.status, last.resources) == (
                event.status, event.resources
            ):  # fmt: skip
                continue  # an approval: no public change
            notices.append(self._notice(event, event.status.value, event.not_before))
        for event_id in changes.removed_events:
            gone = before.get(event_id)
            if gone is not None:
                how = "Canceled" if ends.get(event_id) == "canceled" else "Completed"
                notices.append(self._notice(gone, how, gone.not_before))
        return [
            OutboxEntry(id=n.id, channel=CHANNEL, body=notice_json(n))
            for n in notices
            if n is not None
        ]

    # ------------------------------------------------------------- observer hooks

    def published(self, changes: Changes) -> None:
        """A change is durable and visible: its notices become rows, and are told."""
        if changes.reset:
            for event_id in [i for i, n in self._rows.items() if not n.ended]:
                del self._rows[event_id]
        for entry in changes.outbox:
            if entry.channel != CHANNEL:
                continue
            try:
                notice = notice_from_json(entry.body)
            except ValueError as exc:  # written by this ledger: never, but never fatal
                log.warning("an Event Grid notice left out: %s", exc)
                continue
            self._rows.pop(notice.event_id, None)
            if self._in_order and self._rows:
                last = self._rows[next(reversed(self._rows))]
                self._in_order = _row_key(last) <= _row_key(notice)
            self._rows[notice.event_id] = notice
            if notice.ended:
                self._ended.append((notice.at, notice.event_id))
            for listener in self._listeners:
                listener(notice)

    def reloaded(self, events: Iterable[EventRecord]) -> None:
        del events  # what changed is read off each change: nothing to start over

    def approved(self, vm: str, event_ids: Sequence[str]) -> None:
        del vm, event_ids

    def closing(self) -> None:
        pass

    # -------------------------------------------------------------------- helpers

    def _notice(self, event: EventRecord, status: str, not_before: float | None) -> Notice | None:
        """``event`` in public ``status``; None when its scope does not publish, or no
        ARM resource owns it (a cloud service's events are published nowhere)."""
        if not self.enabled(event.scope_id):
            return None
        owner = self.names.owner(event.scope_id)
        if owner is None:
            return None
        if status != "Scheduled":
            not_before = None if status != "Canceled" else not_before
        return Notice(
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

    def _expire(self) -> None:
        horizon = self.now() - self.retention
        while self._ended and self._ended[0][0] < horizon:
            _, event_id = self._ended.popleft()
            row = self._rows.get(event_id)
            if row is not None and row.ended and row.at < horizon:
                del self._rows[event_id]
