"""The facts of a rehearsal: what happened to each event, what each VM did about it, and
when each VM polled; and the store that keeps them (``ReactionStore``).

Facts are merged, never overwritten: a sighting keeps its earliest time, a poll its
latest, an event the first value known of each field. So every front-end of a
scaled-out fleet writes what it saw to the shared store, and the report merges them all.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

import msgspec
from msgspec.structs import astuple, replace

from forewarn.rehearsal.sliced_drop import RECORDS, drop_sliced

__all__ = [
    "DeliveryFacts",
    "EventFacts",
    "OperationFacts",
    "PollRow",
    "ReactionData",
    "ReactionStore",
    "VmPolls",
    "VmReaction",
]


S = TypeVar("S", bound=msgspec.Struct)


def _known_first(mine: S, other: S) -> S:
    """``mine`` with the fields it lacks taken from ``other`` (the first known wins): a
    copy only when something is new, field values read in C (``astuple``): the tracker
    merges every event of every published change, thousands a wave of a region rollout."""
    new = {
        name: b
        for name, a, b in zip(mine.__struct_fields__, astuple(mine), astuple(other), strict=True)
        if a is None and b is not None
    }
    return replace(mine, **new) if new else mine


def _min(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    return a if b is None or a <= b else b


def _max(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    return a if b is None or a >= b else b


class EventFacts(msgspec.Struct, kw_only=True):
    """What the platform did with one event; every field is known once and never changes."""

    id: str
    operation_id: str | None = None
    kind: str | None = None
    scope_id: str | None = None
    event_type: str | None = None
    source: str | None = None
    resources: tuple[str, ...] | None = None
    created_at: float | None = None
    not_before: float | None = None
    approved_by: str | None = None
    approved_at: float | None = None
    started_at: float | None = None
    start_reason: str | None = None
    ended_at: float | None = None
    ended: str | None = None
    #: Where the approval came from: endpoint, arm, control or policy.
    approved_via: str | None = None

    def merge(self, other: EventFacts) -> EventFacts:
        """Both records' facts; where both know one, this record's (the first known)."""
        return _known_first(self, other)


class OperationFacts(msgspec.Struct, kw_only=True):
    """What the platform did with one operation: the VMs it hit, and which of them it hit
    with no notice (``unnotified``: their scope's Scheduled Events were off, or a scale
    set without terminate notifications), which no event records. A batch of a rolling
    rollout names its rollout, the rollout's scope, its batch (0-based) and how many
    batches the rollout has."""

    id: str
    kind: str | None = None
    target: str | None = None
    rollout_id: str | None = None
    rollout_scope: str | None = None
    batch: int | None = None
    batches: int | None = None
    vms: tuple[str, ...] | None = None
    unnotified: tuple[str, ...] | None = None
    event_ids: tuple[str, ...] | None = None
    created_at: float | None = None
    not_before: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    #: Where it was asked for: control (API, CLI, dashboard) or arm.
    via: str | None = None

    def merge(self, other: OperationFacts) -> OperationFacts:
        """Both records' facts; where both know one, this record's (the first known)."""
        return _known_first(self, other)


class VmReaction(msgspec.Struct, kw_only=True):
    """What one VM did about one event.

    ``first_seen``: first document served to it that showed the event Scheduled;
    ``seen_started``: first that showed it Started; ``incarnation``: the document's;
    ``approved_at``: its first approval naming the event; ``last_poll_before_start``: its
    last request (a poll, or an approval) before the Started document was published."""

    event_id: str
    vm: str
    first_seen: float | None = None
    seen_started: float | None = None
    incarnation: int | None = None
    approved_at: float | None = None
    last_poll_before_start: float | None = None

    def merge(self, other: VmReaction) -> VmReaction:
        """Earliest sightings and approval, latest poll before the start."""
        incarnations = [i for i in (self.incarnation, other.incarnation) if i is not None]
        return VmReaction(
            event_id=self.event_id,
            vm=self.vm,
            first_seen=_min(self.first_seen, other.first_seen),
            seen_started=_min(self.seen_started, other.seen_started),
            incarnation=min(incarnations) if incarnations else None,
            approved_at=_min(self.approved_at, other.approved_at),
            last_poll_before_start=_max(self.last_poll_before_start, other.last_poll_before_start),
        )


class DeliveryFacts(msgspec.Struct, kw_only=True):
    """What Event Grid did with one event for one subscription (a central controller's
    webhook), from the ``eventgrid.delivery`` history entries.

    ``first_attempt``: the first try at any of the event's notices; ``scheduled_at``: when
    the webhook first took (2xx) the Scheduled notice, the one a controller acts on;
    ``delivered_at``: when it first took any notice; ``attempts``: the most tries one
    notice took; ``failed_at``: when a notice was first given up (failed or dropped)."""

    event_id: str
    subscription: str
    first_attempt: float | None = None
    scheduled_at: float | None = None
    delivered_at: float | None = None
    attempts: int | None = None
    failed_at: float | None = None

    def merge(self, other: DeliveryFacts) -> DeliveryFacts:
        """Earliest times, most attempts."""
        attempts = [a for a in (self.attempts, other.attempts) if a is not None]
        return DeliveryFacts(
            event_id=self.event_id,
            subscription=self.subscription,
            first_attempt=_min(self.first_attempt, other.first_attempt),
            scheduled_at=_min(self.scheduled_at, other.scheduled_at),
            delivered_at=_min(self.delivered_at, other.delivered_at),
            attempts=max(attempts) if attempts else None,
            failed_at=_min(self.failed_at, other.failed_at),
        )


class VmPolls(msgspec.Struct, kw_only=True):
    """When a VM first and last asked for its document, and with which api-version."""

    vm: str
    first_poll: float | None = None
    last_poll: float | None = None
    api_version: str | None = None

    def merge(self, other: VmPolls) -> VmPolls:
        """Earliest first poll, latest last poll (with that poll's api-version)."""
        newer = other if (other.last_poll or 0.0) > (self.last_poll or 0.0) else self
        return VmPolls(
            vm=self.vm,
            first_poll=_min(self.first_poll, other.first_poll),
            last_poll=_max(self.last_poll, other.last_poll),
            api_version=newer.api_version or self.api_version or other.api_version,
        )


#: A VM's polls as a plain row: ``(vm, first_poll, last_poll, api_version)``.
PollRow = tuple[str, float | None, float | None, str | None]


class ReactionData(msgspec.Struct, kw_only=True):
    """A batch of facts to write, or everything a store knows."""

    events: list[EventFacts] = []
    vms: list[VmReaction] = []
    polls: list[VmPolls] = []
    operations: list[OperationFacts] = []
    #: More polls, as rows: how the tracker hands over thousands of VMs' polls without an
    #: object per VM (stores write them with ``polls``; reads return ``polls`` only).
    poll_rows: list[PollRow] = []
    #: Event Grid deliveries, per event and subscription.
    deliveries: list[DeliveryFacts] = []

    def empty(self) -> bool:
        """True when there is nothing in it."""
        return not (
            self.events or self.vms or self.polls or self.poll_rows or self.operations
            or self.deliveries
        )  # fmt: skip

    def let_go(self) -> None:
        """Empty every list, a slice of rows at a time (``sliced_drop.py``): a grading's
        million facts, freed at once when it was done, held the event loop 0.35 s."""
        drop_sliced(self.events, self.vms, self.polls, self.operations, self.poll_rows,
                    self.deliveries, rows=RECORDS)  # fmt: skip

    def merged(self, other: ReactionData) -> ReactionData:
        """Both batches, merged record by record (as a store merges them)."""
        events: dict[str, EventFacts] = {}
        for e in (*self.events, *other.events):
            events[e.id] = events[e.id].merge(e) if e.id in events else e
        vms: dict[tuple[str, str], VmReaction] = {}
        for r in (*self.vms, *other.vms):
            key = (r.event_id, r.vm)
            vms[key] = vms[key].merge(r) if key in vms else r
        polls: dict[str, VmPolls] = {}
        rows = (*self.poll_rows, *other.poll_rows)
        as_polls = [
            VmPolls(vm=v, first_poll=f, last_poll=last, api_version=a) for v, f, last, a in rows
        ]
        for p in (*self.polls, *other.polls, *as_polls):
            polls[p.vm] = polls[p.vm].merge(p) if p.vm in polls else p
        operations: dict[str, OperationFacts] = {}
        for o in (*self.operations, *other.operations):
            operations[o.id] = operations[o.id].merge(o) if o.id in operations else o
        deliveries: dict[tuple[str, str], DeliveryFacts] = {}
        for d in (*self.deliveries, *other.deliveries):
            pair = (d.event_id, d.subscription)
            deliveries[pair] = deliveries[pair].merge(d) if pair in deliveries else d
        return ReactionData(
            events=list(events.values()),
            vms=list(vms.values()),
            polls=list(polls.values()),
            operations=list(operations.values()),
            deliveries=list(deliveries.values()),
        )


class ReactionStore(Protocol):
    """Where reaction facts are kept (the stores of ``forewarn.store`` implement it).

    Blocking: the tracker calls it on worker threads."""

    def save_reactions(self, data: ReactionData) -> None:
        """Merge reaction facts into what is stored: an event keeps the first value known
        of each field, a VM its earliest sighting and approval and its latest poll (each
        front-end of a scaled-out fleet writes what it saw). Raises ``StoreUnavailable``."""
        ...

    def reactions(self, since: float | None = None) -> ReactionData:
        """Events and operations created at or after ``since`` (every one: None), the
        reactions to the events and their Event Grid deliveries, and every VM's polls."""
        ...

    def polls(self) -> list[VmPolls]:
        """Every VM's first and last poll, as merged from every front-end."""
        ...

    def reactions_written(self) -> int:
        """How many times facts were written, by every front-end: while it is the same,
        so are ``reactions`` (a verdict graded from them still holds)."""
        ...
