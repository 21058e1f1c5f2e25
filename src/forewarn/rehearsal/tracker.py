"""Reaction tracking: who saw which event when, who approved it, who stopped polling.

The fabric notes the time of each VM's requests (``Fabric.last_requests``, and the VMs
that asked since the tracker last took them, ``Fabric.take_polled``: one dict store in
``Fabric.note_request``, which reads the clock anyway) and tells its observers about
every published change, reload and approval; the endpoint tells the tracker about every
document it serves (``served``, or a repeated poll's ticket straight to the VM's
``Track``). The hot path stays cheap: two reference comparisons (the scope view and
api-version the VM was last served; ``served`` looks the VM's track up first); only when
those changed (a new incarnation) does it look at the document's events, once
per VM and incarnation.

The composition root builds the tracker (``track_reactions``): the fabric does not know
it. Every front-end of a scaled-out fleet records what it served and writes it to the
shared store (batched, off the event loop, at most once a second); the report merges it.
Polls are written every ``POLL_PERSIST_SECONDS``, of the VMs that polled since, as plain
rows built on the tracker's own thread: on the loop, that write costs a dict swap, never a
pass over the fleet nor an object per VM (the stall every fifth second of issue 17).

Writing goes straight to the store rather than through the journal: it is bookkeeping
that must also be written by followers (which have no journal), and it never joins the
replicated change log (which would carry thousands of poll times a second to every
process).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from forewarn.contract import ApiVersion, EventStatus
from forewarn.fabric import (
    RESET_KIND,
    Changes,
    Clock,
    EventRecord,
    Fabric,
    LastRequests,
    NotFoundError,
    OperationRecord,
    RolloutRecord,
    ScopeView,
    StoreUnavailable,
)
from forewarn.fleet.topology import Topology
from forewarn.rehearsal.collector import collector_paused
from forewarn.rehearsal.coping import FaultTally
from forewarn.rehearsal.facts import (
    DeliveryFacts,
    EventFacts,
    OperationFacts,
    PollRow,
    ReactionData,
    ReactionStore,
    VmPolls,
    VmReaction,
)
from forewarn.rehearsal.sliced_drop import drop_sliced
from forewarn.rehearsal.verdict_memo import VerdictMemo

T = TypeVar("T")

__all__ = [
    "DELIVERY_KIND",
    "FLUSH_SECONDS",
    "POLL_PERSIST_SECONDS",
    "Batch",
    "ReactionTracker",
    "track_reactions",
]

log = logging.getLogger(__name__)

#: How often recorded reactions are written (at most).
FLUSH_SECONDS = 1.0
#: How often the polls are written (at most): the last poll of each VM that polled since
#: the previous write (the exact time of the last poll before each event started is
#: written separately, exactly).
POLL_PERSIST_SECONDS = 5.0
#: The history kind of one Event Grid delivery attempt's outcome (the hub writes them):
#: what a central controller was told, and when.
DELIVERY_KIND = "eventgrid.delivery"


def track_reactions(
    fabric: Fabric, store: ReactionStore, *, thread_setup: Callable[[], None] | None = None
) -> ReactionTracker:
    """A tracker of ``fabric``'s reactions, kept in ``store``, told of every change;
    ``thread_setup`` runs first on the thread that writes them (e.g. to lower its
    priority below the event loop's).

    The fabric's live events are noted at once (what ``store`` has is kept): a crash may
    come between an event's write and the tracker's (every few seconds), and a fabric
    loaded after it would otherwise have an event missing from every verdict."""
    tracker = ReactionTracker(
        fabric.topology,
        fabric.clock,
        store,
        last_requests=fabric.last_requests,
        take_polled=fabric.take_polled,
        operation_kind=fabric.operation_kind,
        thread_setup=thread_setup,
    )
    fabric.observe(tracker)
    tracker.reloaded(_live_events(fabric))
    return tracker


def _live_events(fabric: Fabric) -> Iterator[EventRecord]:
    """The live events of the fabric's operations, read without firing the timers due
    meanwhile (``Fabric.events`` would, and there may be no loop to write them yet)."""
    for operation in fabric.operations():
        for event_id in operation.event_ids:
            with contextlib.suppress(NotFoundError):  # ended
                yield fabric.event(event_id)


class Track:
    """What one VM was last served. A holder of it (a repeated poll's ticket) tells it of
    each document served with ``served``, without a look-up by name: at 10,000 VMs a
    look-up in a table of 10,000 is a cache miss or two a poll."""

    __slots__ = ("_tracker", "first_poll", "version", "view", "vm")

    def __init__(self, tracker: ReactionTracker | None, vm: str) -> None:
        self._tracker = tracker
        self.vm = vm
        self.first_poll = 0.0
        self.view: ScopeView | None = None
        self.version: ApiVersion | None = None

    def served(self, view: ScopeView, version: ApiVersion) -> None:
        """A document of ``view`` went to this VM for ``version`` (the hot path: its time
        is the request's, already in ``last_requests``)."""
        if self.view is view and self.version is version:
            return
        tracker = self._tracker
        assert tracker is not None  # (only ``_NO_TRACK`` has none, and serves nothing)
        tracker.new_document(self, view, version)


_NO_TRACK = Track(None, "")


@dataclass(slots=True)
class Batch:
    """One write: the facts taken, and each VM's last poll since the previous batch."""

    facts: ReactionData
    polled: dict[str, float]


class ReactionTracker:
    """Records reactions in memory and writes them to the store in batches."""

    def __init__(
        self,
        topology: Topology,
        clock: Clock,
        store: ReactionStore,
        *,
        last_requests: LastRequests,
        take_polled: Callable[[], dict[str, float]],
        operation_kind: Callable[[str], str | None] = lambda _: None,
        thread_setup: Callable[[], None] | None = None,
    ) -> None:
        """``store`` keeps the facts (blocking: called on the tracker's thread);
        ``last_requests`` is each VM's last request as the fabric notes it (read, never
        written); ``take_polled`` hands over (and forgets) the last request of each VM
        that asked since its previous call; ``operation_kind`` names an event's
        operation; ``thread_setup`` runs first on the writing thread."""
        self._now = clock.now
        self._save = store.save_reactions
        self._load = store.reactions
        self._load_polls = store.polls
        self._written = store.reactions_written
        self._operation_kind = operation_kind
        #: What each VM that asked was last served (made on its first request).
        self._tracks: dict[str, Track] = {}
        self.last_requests = last_requests
        #: Per live event, the VMs recorded as having seen it (Scheduled, then Started).
        self._seen: dict[str, set[str]] = {}
        self._seen_started: dict[str, set[str]] = {}
        self._started: set[str] = set()
        self._events: dict[str, EventFacts] = {}
        self._vms: dict[tuple[str, str], VmReaction] = {}
        self._operations: dict[str, OperationFacts] = {}
        self._deliveries: dict[tuple[str, str], DeliveryFacts] = {}
        #: Live rollouts as last published (a batch's operation is placed in its rollout).
        self._rollouts: dict[str, RolloutRecord] = {}
        self._flushing: asyncio.Lock | None = None
        self._take_polled = take_polled
        #: Polls of a batch that could not be written: part of the next one.
        self._unwritten: dict[str, float] = {}
        self._thread_setup = thread_setup
        self._executor: ThreadPoolExecutor | None = None
        #: Requests an injected endpoint fault answered, per VM (memory only).
        self.fault_tallies: dict[str, FaultTally] = {}
        #: The last verdict graded, kept while nothing it was graded from moved (read and
        #: written on this tracker's thread only: ``off_loop``).
        self.verdicts = VerdictMemo()

    # ------------------------------------------------------------- recording

    def served(self, vm: str, view: ScopeView, version: ApiVersion) -> None:
        """A document of ``view`` went to ``vm`` for ``version``."""
        self.track(vm).served(view, version)

    def track(self, vm: str) -> Track:
        """What ``vm`` was last served (made on its first request), the same object for as
        long as the tracker lives: a holder may tell it directly (``Track.served``)."""
        track = self._tracks.get(vm)
        if track is None:
            track = self._tracks[vm] = Track(self, vm)
        return track

    def new_document(self, track: Track, view: ScopeView, version: ApiVersion) -> None:
        """First time ``track``'s VM gets this incarnation (or api-version), at its request's
        time: note what it shows (``Track.served``)."""
        vm = track.vm
        now = self.last_requests.get(vm) or self._now()
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

    def faulted(self, vm: str, kind: str) -> None:
        """An injected endpoint fault answered (or delayed) a request of ``vm``."""
        now = self._now()
        tally = self.fault_tallies.get(vm)
        if tally is None:
            tally = self.fault_tallies[vm] = FaultTally(first=now, last=now)
        tally.add(kind, now)

    def approved(self, vm: str, event_ids: Sequence[str]) -> None:
        """``vm`` approved ``event_ids`` (validated: each is visible to it)."""
        now = self._now()
        for event_id in event_ids:
            self._note(VmReaction(event_id=event_id, vm=vm, approved_at=now))

    def published(self, changes: Changes) -> None:
        """A durable change became visible: note what happened to its operations (the
        VMs each hit, with or without notice) and its events."""
        for rollout in changes.rollouts:
            if rollout.done:
                self._rollouts.pop(rollout.id, None)
            else:
                self._rollouts[rollout.id] = rollout
        for op in changes.operations:
            self._record_operation(op)
        for entry in changes.history:
            if entry.kind == DELIVERY_KIND and entry.event_id is not None:
                self._record_delivery(entry.event_id, entry.at, entry.detail)
            elif entry.kind == RESET_KIND:  # a new drill: its faulted requests apart
                for tally in self.fault_tallies.values():
                    tally.seal(keep_times=True)
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

    def _record_operation(self, op: OperationRecord) -> None:
        rollout = self._rollouts.get(op.rollout_id) if op.rollout_id is not None else None
        batch = batches = None
        if rollout is not None and rollout.region:  # a wave: the rollout's current one
            # (merged facts keep the first batch known, from when it was made)
            batches = rollout.waves
            if rollout.current_operation == op.id:
                batch = rollout.next_batch - 1
        elif rollout is not None:
            batches = len(rollout.batches)
            if op.vms:
                first = op.vms[0]
                batch = next((i for i, b in enumerate(rollout.batches) if first in b), None)
        facts = OperationFacts(
            id=op.id,
            kind=op.kind,
            target=op.target,
            rollout_id=op.rollout_id,
            rollout_scope=rollout.scope_id or None if rollout is not None else None,
            batch=batch,
            batches=batches,
            vms=op.vms,
            unnotified=op.unnotified,
            event_ids=op.event_ids,
            created_at=op.created_at,
            not_before=op.not_before,
            started_at=op.started_at,
            ended_at=op.ended_at,
            via=op.via,
        )
        known = self._operations.get(op.id)
        self._operations[op.id] = facts if known is None else known.merge(facts)

    def _record_delivery(self, event_id: str, at: float, detail: Mapping[str, object]) -> None:
        """One delivery attempt's outcome, as the hub wrote it to the history."""
        subscription = detail.get("subscription")
        if not isinstance(subscription, str):
            return
        outcome = detail.get("outcome")
        attempt = detail.get("attempt")
        delivered = outcome == "delivered"
        facts = DeliveryFacts(
            event_id=event_id,
            subscription=subscription,
            first_attempt=at,
            scheduled_at=at if delivered and detail.get("status") == "Scheduled" else None,
            delivered_at=at if delivered else None,
            attempts=attempt if isinstance(attempt, int) and attempt > 0 else None,
            failed_at=at if outcome in ("failed", "dropped") else None,
        )
        key = (event_id, subscription)
        known = self._deliveries.get(key)
        self._deliveries[key] = facts if known is None else known.merge(facts)

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
            approved_via=event.approved_via,
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
        return self.last_requests.copy()

    def shared_polls(self) -> list[VmPolls]:
        """Every VM's polls as every front-end wrote them (blocking: a store read)."""
        return self._load_polls()

    def stored_facts(self, since: float | None = None) -> ReactionData:
        """What every process wrote (blocking: a store read, for work already off the
        loop; ``facts`` writes this process's latest first)."""
        return self._load(since)

    def stored_writes(self) -> int:
        """How many times every process wrote facts (blocking: a store read): the same
        count, the same ``stored_facts``."""
        return self._written()

    async def facts(self, since: float | None = None) -> ReactionData:
        """Everything known, this process's latest included: written first, then read
        back merged with what every other process wrote (raises ``StoreUnavailable``)."""
        await self.flush()
        return await asyncio.to_thread(self._load, since)

    # ------------------------------------------------------------------ writing

    def take(self, *, polls: bool = True) -> Batch | None:
        """The batch to write now (None: nothing), no longer pending once taken; on the
        loop, and cheap there: the facts noted since the last batch, and with ``polls`` the
        VMs that polled since (a dict swapped, not a pass over the fleet: ``write`` turns
        it into rows on the writing thread)."""
        polled = self._take_polled() if polls else {}
        if self._unwritten:  # polls of a failed write, older than these
            self._unwritten.update(polled)
            polled, self._unwritten = self._unwritten, {}
        if (
            not polled and not self._events and not self._vms and not self._operations
            and not self._deliveries
        ):  # fmt: skip
            return None
        data = ReactionData(
            events=list(self._events.values()),
            vms=list(self._vms.values()),
            operations=list(self._operations.values()),
            deliveries=list(self._deliveries.values()),
        )
        self._events, self._vms, self._operations, self._deliveries = {}, {}, {}, {}
        return Batch(data, polled)

    def write(self, batch: Batch) -> None:
        """Write ``batch`` (blocking: on a worker thread): its polls become one plain row
        per VM that polled, built here rather than on the loop."""
        tracks = self._tracks
        rows: list[PollRow] = []
        for vm, last in batch.polled.items():
            track = tracks.get(vm, _NO_TRACK)
            version = track.version
            rows.append((
                vm, track.first_poll or last, last, None if version is None else version.name
            ))  # fmt: skip
        batch.facts.poll_rows = rows
        try:
            self._save(batch.facts)
        finally:  # the rows are freed here, with the collector held off (``collector.py``),
            batch.facts.poll_rows = []  # not when the loop drops the batch
        # written: its facts too, in pieces (``sliced_drop.py``); dropped on the loop with
        # the batch, a wave's thousands of them held it 0.1 s at a million VMs
        batch.facts.let_go()
        drop_sliced(batch.polled)

    def restore(self, batch: Batch) -> None:
        """A batch that could not be written is pending again (merged with newer facts)."""
        data = batch.facts
        for facts in data.events:
            self._note_event(facts)
        for reaction in data.vms:
            self._note(reaction)
        for op in data.operations:
            known = self._operations.get(op.id)
            self._operations[op.id] = op if known is None else known.merge(op)
        for delivery in data.deliveries:
            key = (delivery.event_id, delivery.subscription)
            had = self._deliveries.get(key)
            self._deliveries[key] = delivery if had is None else had.merge(delivery)
        unwritten = self._unwritten
        for vm, last in batch.polled.items():
            if last > unwritten.get(vm, last - 1.0):
                unwritten[vm] = last

    async def flush(self, *, polls: bool = True) -> None:
        """Write what is pending, off the event loop (on the tracker's own thread); one
        flush at a time. A failed write raises ``StoreUnavailable`` and keeps everything
        pending."""
        if self._flushing is None:
            self._flushing = asyncio.Lock()
        async with self._flushing:
            batch = self.take(polls=polls)
            if batch is None:
                return
            try:
                await self.off_loop(self.write, batch)
            except BaseException:
                self.restore(batch)
                raise

    async def off_loop(self, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` on the tracker's own thread, below the event loop (writes, and
        a report's grading and rendering: 0.2-0.6 s at 10,000 VMs), with the collector held
        off (``collector.py``)."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(
                1, thread_name_prefix="forewarn-reactions", initializer=self._thread_setup
            )
        return await asyncio.get_running_loop().run_in_executor(
            self._executor, _collector_paused, work, args
        )

    def closing(self) -> None:
        """The fabric is closing: write what is pending now."""
        self.flush_now()
        if self._executor is not None:
            self._executor.shutdown(wait=False)

    def flush_now(self) -> None:
        """Write what is pending on this thread (at shutdown, with no loop running)."""
        batch = self.take()
        if batch is None:
            return
        try:
            self.write(batch)
        except StoreUnavailable as exc:
            self.restore(batch)
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
                if self.verdicts.holding():
                    await self.off_loop(self.verdicts.forget_idle)  # freed on this thread
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


def _collector_paused(work: Callable[..., T], args: tuple[Any, ...]) -> T:
    """``work(*args)`` with the collector held off; what it made is freed inside too."""
    with collector_paused():
        return work(*args)
