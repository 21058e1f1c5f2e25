"""Reaction tracking: who saw which event when, who approved it, who stopped polling.

The fabric notes the time of each VM's requests (``last_requests``, one dict store in
``Fabric.note_request``, which reads the clock anyway); the endpoint tells the tracker
about every document it serves (``served``) and every approval it accepts
(``approved``); the fabric tells it about every published change (``published``). The
hot path stays cheap: ``served`` is one dict look-up and two reference comparisons (the
scope view and api-version the VM was last served); only when those changed (a new
incarnation) does it look at the document's events, once per VM and incarnation.

Facts are merged, never overwritten: a sighting keeps its earliest time, a poll its
latest, an event the first value known of each field. So every front-end of a
scaled-out fleet records what it served, writes it to the shared store (batched, off
the event loop, at most once a second), and the report merges them all.

Writing goes straight to the store rather than through the journal: it is bookkeeping
that must also be written by followers (which have no journal), and it never joins the
replicated change log (which would carry thousands of poll times a second to every
process).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from forewarn.contract import ApiVersion, EventStatus
from forewarn.fabric.clock import Clock
from forewarn.fabric.errors import StoreUnavailable
from forewarn.fabric.records import Changes, EventRecord
from forewarn.fabric.scope_view import ScopeView
from forewarn.fleet.topology import Topology

__all__ = [
    "FLUSH_SECONDS",
    "POLL_PERSIST_SECONDS",
    "EventFacts",
    "ReactionData",
    "ReactionTracker",
    "VmPolls",
    "VmReaction",
]

log = logging.getLogger(__name__)

#: How often recorded reactions are written (at most).
FLUSH_SECONDS = 1.0
#: A VM's last poll is written again once it moved on by this much (the exact time of
#: the last poll before each event started is written separately, exactly).
POLL_PERSIST_SECONDS = 5.0


def _first(a: Any, b: Any) -> Any:
    return b if a is None else a


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

    def merge(self, other: EventFacts) -> EventFacts:
        """Both records' facts; where both know one, this record's (the first known)."""
        fields = self.__struct_fields__
        return EventFacts(**{f: _first(getattr(self, f), getattr(other, f)) for f in fields})


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


class ReactionData(msgspec.Struct, kw_only=True):
    """A batch of facts to write, or everything a store knows."""

    events: list[EventFacts] = []
    vms: list[VmReaction] = []
    polls: list[VmPolls] = []

    def empty(self) -> bool:
        """True when there is nothing in it."""
        return not (self.events or self.vms or self.polls)

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
        for p in (*self.polls, *other.polls):
            polls[p.vm] = polls[p.vm].merge(p) if p.vm in polls else p
        return ReactionData(
            events=list(events.values()), vms=list(vms.values()), polls=list(polls.values())
        )


class _Track:
    """What one VM was last served."""

    __slots__ = ("first_poll", "persisted", "version", "view")

    def __init__(self) -> None:
        self.first_poll = 0.0
        self.persisted = 0.0
        self.view: ScopeView | None = None
        self.version: ApiVersion | None = None


class ReactionTracker:
    """Records reactions in memory and writes them to the store in batches."""

    def __init__(
        self,
        topology: Topology,
        clock: Clock,
        save: Callable[[ReactionData], None],
        load: Callable[[float | None], ReactionData],
        load_polls: Callable[[], list[VmPolls]],
        operation_kind: Callable[[str], str | None] = lambda _: None,
    ) -> None:
        """``save``, ``load`` and ``load_polls`` are the store's (blocking: called on
        worker threads); ``operation_kind`` names an event's operation."""
        self._now = clock.now
        self._save = save
        self._load = load
        self._load_polls = load_polls
        self._operation_kind = operation_kind
        self._tracks = {name: _Track() for name in topology.vms}
        #: Each VM's last request to the endpoint (written by ``Fabric.note_request``).
        self.last_requests: dict[str, float] = {}
        #: Per live event, the VMs recorded as having seen it (Scheduled, then Started).
        self._seen: dict[str, set[str]] = {}
        self._seen_started: dict[str, set[str]] = {}
        self._started: set[str] = set()
        self._events: dict[str, EventFacts] = {}
        self._vms: dict[tuple[str, str], VmReaction] = {}
        self._flushing: asyncio.Lock | None = None

    # ------------------------------------------------------------- recording

    def served(self, vm: str, view: ScopeView, version: ApiVersion) -> None:
        """A document of ``view`` went to ``vm`` for ``version`` (the hot path: its time
        is the request's, already in ``last_requests``)."""
        track = self._tracks[vm]
        if track.view is view and track.version is version:
            return
        self._new_document(vm, track, view, version, self.last_requests.get(vm) or self._now())

    def _new_document(
        self, vm: str, track: _Track, view: ScopeView, version: ApiVersion, now: float
    ) -> None:
        """First time ``vm`` gets this incarnation (or api-version): note what it shows."""
        if not track.first_poll:
            track.first_poll = now
        track.view, track.version = view, version
        types = version.event_types
        for event in view.events_for(vm):
            if event.event_type not in types:
                continue  # not in the document this api-version renders
            started = event.status is EventStatus.STARTED
            seen = (self._seen_started if started else self._seen).setdefault(event.event_id, set())
            if vm in seen:
                continue
            seen.add(vm)
            reaction = VmReaction(event_id=event.event_id, vm=vm, incarnation=view.incarnation)
            if started:
                reaction.seen_started = now
            else:
                reaction.first_seen = now
            self._note(reaction)

    def approved(self, vm: str, event_ids: Iterable[str]) -> None:
        """``vm`` approved ``event_ids`` (validated: each is visible to it)."""
        now = self._now()
        for event_id in event_ids:
            self._note(VmReaction(event_id=event_id, vm=vm, approved_at=now))

    def published(self, changes: Changes) -> None:
        """A durable change became visible: note what happened to its events."""
        if not changes.events and not changes.removed_events:
            return
        reasons: dict[str, str] = {}
        ends: dict[str, tuple[float, str]] = {}
        for entry in changes.history:
            if entry.event_id is None:
                continue
            if entry.kind == "event.started":
                reasons[entry.event_id] = str(entry.detail.get("reason", ""))
            elif entry.kind in ("event.completed", "event.canceled"):
                ends[entry.event_id] = (entry.at, entry.kind.partition(".")[2])
        for event in changes.events:
            self._record_event(event, reasons.get(event.id))
        for event_id in changes.removed_events:
            at, how = ends.get(event_id, (self._now(), "completed"))
            self._note_event(EventFacts(id=event_id, ended_at=at, ended=how))
            for table in (self._seen, self._seen_started):
                table.pop(event_id, None)
            self._started.discard(event_id)

    def reloaded(self, events: Iterable[EventRecord]) -> None:
        """The whole state was replaced (a follower caught up): note its live events, and
        forget what was kept for events that ended meanwhile."""
        live = set()
        for event in events:
            live.add(event.id)
            self._record_event(event, None)
        for table in (self._seen, self._seen_started):
            for gone in [i for i in table if i not in live]:
                del table[gone]
        self._started &= live

    def _record_event(self, event: EventRecord, reason: str | None) -> None:
        facts = EventFacts(
            id=event.id,
            operation_id=event.operation_id,
            kind=self._operation_kind(event.operation_id),
            scope_id=event.scope_id,
            event_type=event.event_type.value,
            source=event.source.value,
            resources=event.resources,
            created_at=event.created_at,
            not_before=event.not_before,
            approved_by=event.approved_by,
            approved_at=event.approved_at,
            started_at=event.started_at,
            start_reason=reason,
        )
        self._note_event(facts)
        if event.status is EventStatus.STARTED and event.id not in self._started:
            self._started.add(event.id)
            for vm in event.resources:
                last = self.last_requests.get(vm)
                if last is not None:
                    self._note(VmReaction(event_id=event.id, vm=vm, last_poll_before_start=last))

    def _note(self, reaction: VmReaction) -> None:
        key = (reaction.event_id, reaction.vm)
        known = self._vms.get(key)
        self._vms[key] = reaction if known is None else known.merge(reaction)

    def _note_event(self, facts: EventFacts) -> None:
        known = self._events.get(facts.id)
        self._events[facts.id] = facts if known is None else known.merge(facts)

    # ----------------------------------------------------------------- reading

    def last_polls(self) -> dict[str, float]:
        """Each VM's last poll seen by this process (VMs that never polled left out)."""
        return dict(self.last_requests)

    def shared_polls(self) -> list[VmPolls]:
        """Every VM's polls as every front-end wrote them (blocking: a store read)."""
        return self._load_polls()

    async def facts(self, since: float | None = None) -> ReactionData:
        """Everything known, this process's latest included: written first, then read
        back merged with what every other process wrote (raises ``StoreUnavailable``)."""
        await self.flush()
        return await asyncio.to_thread(self._load, since)

    # ------------------------------------------------------------------ writing

    def take(self, *, polls: bool = True) -> ReactionData | None:
        """The batch to write now (None: nothing), no longer pending once taken;
        ``polls``: with the VMs whose last poll moved on (a pass over every VM)."""
        moved = []
        tracks = self._tracks
        for name, last in self.last_requests.items() if polls else ():
            track = tracks[name]
            if last - track.persisted >= POLL_PERSIST_SECONDS:
                moved.append(
                    VmPolls(
                        vm=name,
                        first_poll=track.first_poll or last,
                        last_poll=last,
                        api_version=track.version.name if track.version is not None else None,
                    )
                )
                track.persisted = last
        if not moved and not self._events and not self._vms:
            return None
        data = ReactionData(
            events=list(self._events.values()), vms=list(self._vms.values()), polls=moved
        )
        self._events, self._vms = {}, {}
        return data

    def restore(self, data: ReactionData) -> None:
        """A batch that could not be written is pending again (merged with newer facts)."""
        for facts in data.events:
            self._note_event(facts)
        for reaction in data.vms:
            self._note(reaction)
        for poll in data.polls:
            track = self._tracks.get(poll.vm)
            if track is not None:
                track.persisted = 0.0

    async def flush(self, *, polls: bool = True) -> None:
        """Write what is pending, off the event loop; one flush at a time. A failed write
        raises ``StoreUnavailable`` and keeps everything pending."""
        if self._flushing is None:
            self._flushing = asyncio.Lock()
        async with self._flushing:
            data = self.take(polls=polls)
            if data is None:
                return
            try:
                await asyncio.to_thread(self._save, data)
            except BaseException:
                self.restore(data)
                raise

    def flush_now(self) -> None:
        """Write what is pending on this thread (at shutdown, with no loop running)."""
        data = self.take()
        if data is None:
            return
        try:
            self._save(data)
        except StoreUnavailable as exc:
            self.restore(data)
            log.warning("reactions not written at shutdown: %s", exc)

    async def run(self, interval: float = FLUSH_SECONDS) -> None:
        """Write pending reactions every ``interval`` seconds until cancelled."""
        failing = False
        rounds = 0
        every = max(1, round(POLL_PERSIST_SECONDS / interval))
        while True:
            await asyncio.sleep(interval)
            rounds += 1
            try:
                await self.flush(polls=rounds % every == 0)  # a pass over every VM: rarer
            except StoreUnavailable as exc:
                if not failing:
                    log.warning("reactions wait for the store: %s", exc)
                failing = True
                continue
            except Exception:  # a bug must not end the recording for good
                log.exception("writing reactions failed")
                continue
            failing = False
