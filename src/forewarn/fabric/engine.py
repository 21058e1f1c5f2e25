"""The fabric: the simulated platform's public face, composed of its parts.

Every change takes one path: the lifecycle rules (``rules.py``) build a ``Tx`` on the
working state, ``rules.seal`` makes it ``Changes``, and the pipeline (``pipeline.py``)
bumps exactly the incarnations of the documents that changed, has the journal write it
in one transaction, and only then publishes it. A crash leaves the old state or the new
one on disk, never half of each; a failed write changes nothing. Readers see the
published state only. While it holds a ``Follower`` (``follower.py``), a fabric follows
a scaled-out fleet's leader and writes nothing itself.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import asdict
from typing import Any

import msgspec

from forewarn.contract import EventType
from forewarn.fabric import rules
from forewarn.fabric.catalogue import CATALOGUE
from forewarn.fabric.clock import Clock
from forewarn.fabric.config import FabricConfig
from forewarn.fabric.errors import NotFoundError, StoreUnavailable
from forewarn.fabric.follower import Follower
from forewarn.fabric.ids import new_event_id, new_token
from forewarn.fabric.impact import vm_status, vm_statuses
from forewarn.fabric.journal import Commit, InlineJournal, Journal
from forewarn.fabric.last_requests import LastRequests
from forewarn.fabric.lifecycle import EventPhase, Step, next_event_phase
from forewarn.fabric.pipeline import Pipeline
from forewarn.fabric.planner import OperationRequest
from forewarn.fabric.ports import FabricObserver, Owing, Store
from forewarn.fabric.records import (
    Changes,
    EventRecord,
    HistoryEntry,
    OperationRecord,
    OperationState,
    RolloutRecord,
    ScopeState,
    Snapshot,
)
from forewarn.fabric.relay import Relay
from forewarn.fabric.scope_view import ScopeView
from forewarn.fabric.standing import Standing
from forewarn.fabric.state import FabricState
from forewarn.fabric.transaction import Tx, find_event
from forewarn.fleet.topology import VM, ScopePolicy, Topology

__all__ = ["Fabric", "FabricConfig", "ScopeView"]

log = logging.getLogger(__name__)


class Fabric:
    """The simulated platform over a store: create, approve, start, remove, cancel."""

    def __init__(
        self,
        topology: Topology,
        store: Store,
        clock: Clock,
        config: FabricConfig | None = None,
        *,
        journal: Journal | None = None,
        new_id: Callable[[], str] = new_event_id,
        new_token: Callable[[], str] = new_token,
    ) -> None:
        """``journal`` writes changes (default: at once, on the caller's thread); ``new_id``
        makes event ids, ``new_token`` operation and rollout ids (tests: deterministic)."""
        self.topology = topology
        self.clock = clock
        self.config = config = config or FabricConfig()
        self._store = store
        user_kinds = frozenset(s.kind.value for s in CATALOGUE.values() if s.user_initiated)
        self._pipe = Pipeline(topology, store.load(), journal or InlineJournal(store), user_kinds)
        self._work: FabricState = self._pipe.work  # every new transition builds on it
        self._seen: FabricState = self._pipe.published  # all that readers see
        self._rules = rules.Platform(topology, config, new_id, new_token, self.is_enabled)
        #: Each scope's last request (persisted or not): enablement and its idle window.
        self._last_seen: dict[str, float] = {}
        self._remember_requests(self._pipe.work.scopes.values())
        self._idle_window = config.scaled(config.idle_disable_seconds)
        self._persist_every = config.last_request_persist_seconds
        #: Set while this process follows the leader of a scaled-out fleet (it never writes).
        self._follower: Follower | None = None
        #: The way approvals went to the leader while this process last followed: some
        #: may still be on their way after it took the lead (``durable`` waits for them).
        self._relayed: Follower | None = None
        #: A leader of a scaled-out fleet: how it applies the approvals followers recorded
        #: (``apply_relayed_first``), and the instant up to which it applied every one
        #: recorded: timers fire only up to it, so that a NotBefore never passes over an
        #: approval a follower answered 200 before it (no bound without ``apply``).
        self._apply_relayed: Callable[[], Awaitable[object]] | None = None
        self._relayed_until = -math.inf
        #: True in a scaled-out fleet: views may lag behind another front-end's.
        self.replicated = False
        #: Until when this process may serve its views and write (``standing.py``): in a
        #: scaled-out fleet, only as long after it last heard from the database.
        self.standing = Standing()
        #: Each VM's last request to this process's endpoint (``note_request``), the ones
        #: since ``take_polled`` last took them apart (``last_requests.py``).
        self.last_requests = LastRequests()
        self._observers: list[FabricObserver] = []
        self._reload_listeners: list[Callable[[], None]] = []

    # ---------------------------------------------------------------- listening

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after every change is built (the scheduler wakes on it)."""
        self._pipe.on_change(listener)

    def on_history(self, listener: Callable[[list[HistoryEntry]], None]) -> None:
        """Call ``listener`` with the history entries of every durable change."""
        self._pipe.on_history(listener)

    def on_publish(self, listener: Callable[[Changes], None]) -> None:
        """Call ``listener`` with every change once it is durable and visible."""
        self._pipe.on_publish(listener)

    def on_reload(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after the whole state was replaced (``reload``, ``lead``):
        no change was published for it, so incremental readers start over."""
        self._reload_listeners.append(listener)

    def owe(self, owing: Owing) -> None:
        """Write with every change what ``owing`` says it owes (its ``outbox``)."""
        self._pipe.owe(owing)

    def observe(self, observer: FabricObserver) -> None:
        """Tell ``observer`` about every published change, reload, approval, and close."""
        self._observers.append(observer)
        self._pipe.on_publish(observer.published)

    # ------------------------------------------------------------------ reading

    def view(self, scope_id: str) -> ScopeView:
        """The current document of a scope (late timers fired first)."""
        self.catch_up()
        try:
            return self._pipe.views[scope_id]
        except KeyError:
            raise NotFoundError(f"no scope named {scope_id!r}") from None

    async def view_at_least(self, scope_id: str, incarnation: int, timeout: float) -> ScopeView:
        """A scope's view once it reached ``incarnation`` (another front-end of a
        scaled-out fleet showed it already), or after ``timeout`` s whatever it is."""
        if scope_id not in self._pipe.views:
            raise NotFoundError(f"no scope named {scope_id!r}")
        return await self._pipe.view_at_least(scope_id, incarnation, timeout)

    def events(self) -> list[EventRecord]:
        """Every live (visible) event, in creation order (late timers fired first)."""
        self.catch_up()
        return list(self._seen.events.values())

    def event(self, event_id: str) -> EventRecord:
        """A live event by id (case-insensitive)."""
        return find_event(self._seen.events, event_id)

    def operations(self) -> list[OperationRecord]:
        """Every operation this database has seen, oldest first."""
        return list(self._seen.operations.values())

    def operation(self, operation_id: str) -> OperationRecord:
        """An operation by id."""
        try:
            return self._seen.operations[operation_id]
        except KeyError:
            raise NotFoundError(f"no operation with id {operation_id!r}") from None

    def operation_kind(self, operation_id: str) -> str | None:
        """The kind of an operation of the working state (None: unknown)."""
        op = self._work.operations.get(operation_id)
        return None if op is None else op.kind

    def rollouts(self) -> list[RolloutRecord]:
        """Every rollout (update-domain walk)."""
        return list(self._seen.rollouts.values())

    def is_deleted(self, vm_name: str) -> bool:
        """True once a Preempt or Terminate has removed the VM."""
        return vm_name in self._seen.deleted

    @property
    def deleted_names(self) -> AbstractSet[str]:
        """Every VM a Preempt or Terminate has removed: the live set itself, for a hot path
        to hold and ask (read only; ``deleted_vms`` gives a copy). It stays the same object
        until the whole state is replaced: holders ask again ``on_reload``."""
        return self._seen.deleted

    def deleted_vms(self) -> frozenset[str]:
        """Every VM a Preempt or Terminate has removed (a copy: readers off the loop)."""
        return frozenset(self._seen.deleted)

    def vm_status(self, vm_name: str) -> str:
        """``running``, ``deleted``, or the impact under way (``impact.py``)."""
        return vm_status(self._seen, vm_name, self.clock.now())

    def vm_statuses(self) -> dict[str, str]:
        """Every VM that is not ``running``, with its ``vm_status`` (one pass)."""
        return vm_statuses(self._seen, self.clock.now())

    def is_enabled(self, scope_id: str, now: float | None = None) -> bool:
        """Whether Scheduled Events are on for a scope (first request seen, not idle)."""
        if self.config.enablement == "always":
            return True
        last = self._last_seen.get(scope_id)
        if last is None:
            return False
        now = self.clock.now() if now is None else now
        return now - last < self._idle_window

    def history(self, **filters: Any) -> list[HistoryEntry]:
        """The append-only history (see ``Store.history`` for filters). Reads the disk:
        servers call it off the event loop."""
        return self._store.history(**filters)

    def next_due(self) -> float | None:
        """The earliest instant at which a timer fires, or None when nothing is pending."""
        return self._pipe.timers.next_due(self._work.active)

    def catch_up(self) -> None:
        """Fire due timers now if any is late (cheap when none is): readers never see a
        Scheduled event past its NotBefore just because the scheduler has not woken yet
        (with a threaded journal: once the transition is durable, a moment later).
        A follower leaves timers to the leader."""
        if self._follower is not None:
            return
        if self._pipe.timers.any_due(self._due_by(), self._work.active):
            self.run_due()

    # --------------------------------------------------------------- durability

    async def durable(self) -> None:
        """Wait until every change made so far is durable and visible; raises
        ``StoreUnavailable`` when it could not be written (then nothing changed).
        Approvals relayed to a leader count until they are durably recorded, in either
        role: one relayed just before this process took the lead is answered only once
        recorded (then this process applies it), as a write queued just before it
        stepped down is answered once written or refused."""
        if self._relayed is not None:
            await self._relayed.settled()
        await self._pipe.durable()

    def store_error(self) -> StoreUnavailable | None:
        """Why the last write failed, until a write succeeds again (None: healthy)."""
        return self._pipe.error

    def probe_store(self) -> None:
        """Try a harmless write, so a store that recovered is noticed without traffic."""
        self._pipe.probe()

    def writes_in_flight(self) -> int:
        """Changes queued for the disk or being written, and relayed approvals not yet
        recorded."""
        relayed = 0 if self._relayed is None else self._relayed.pending()
        return relayed + self._pipe.in_flight()

    def close(self) -> None:
        """Tell the observers (they write what they hold), then write what is queued and
        stop the journal."""
        for observer in self._observers:
            observer.closing()
        self._pipe.close()

    # ------------------------------------------------------------- the endpoint

    def note_request(self, vm: VM) -> bool:
        """Record that a VM asked for its document; True when this enabled its scope.

        The common case (``_noted_quietly``) writes nothing; otherwise the write is queued,
        never waited for: bookkeeping is not worth a VM's wait, and a failed one is retried
        on a later request."""
        now = self.clock.now()
        if self._noted_quietly(vm, now):
            return False
        self.last_requests.fresh[vm.name] = now  # the tracker's "last poll", and what it
        # writes next (``take_polled``)
        scope_id = vm.scope_id
        last = self._last_seen.get(scope_id)
        recent = last is not None and now - last < self._idle_window
        self._last_seen[scope_id] = now
        if self._follower is not None:
            return self._follower.note_request(vm, now, recent)
        was_enabled = recent or self.config.enablement == "always"
        if was_enabled and self._pipe.writes_on_hold():
            return False
        try:
            self._note_scope_request(self._tx(now), scope_id, vm.name, enables=not was_enabled)
        except StoreUnavailable:  # (refused for good, or not sure it still leads): a later
            return False  # request tries again; the store's state says why (/healthz)
        return not was_enabled

    def repeated_poll(self, vm: VM) -> ScopeView | None:
        """``note_request`` then ``view``, in one and on one clock read, when the request
        changes nothing durable (``_noted_quietly``): a VM's poll sent again, the endpoint's
        hottest path. None: nothing was noted, call ``note_request`` and ``view``."""
        now = self.clock.now()
        if not self._noted_quietly(vm, now):
            return None
        if self._follower is None and self._pipe.timers.any_due(now, self._work.active):
            self.run_due()  # ``catch_up``, same instant
        return self._pipe.views[vm.scope_id]

    def _noted_quietly(self, vm: VM, now: float) -> bool:
        """Note ``vm``'s request at ``now`` if that changes nothing durable: the scope is
        enabled and its last request was persisted (leading) or relayed to the leader
        (following) recently; False: nothing noted."""
        scope_id = vm.scope_id
        last = self._last_seen.get(scope_id)
        if last is None or now - last >= self._idle_window:
            return False
        follower = self._follower
        if follower is None:
            persisted = self._work.scopes[scope_id].last_request_at
            if persisted is None or now - persisted >= self._persist_every:
                return False
        elif not follower.quiet(scope_id, now):
            return False
        self.last_requests.fresh[vm.name] = now  # the tracker's "last poll", and what it
        # writes next (``take_polled``)
        self._last_seen[scope_id] = now
        return True

    def take_polled(self) -> dict[str, float]:
        """The last request of each VM that asked since the previous call (a swap: the
        caller owns the dict; merging it into ``last_requests`` is one pass in C over what
        changed, not over the fleet)."""
        return self.last_requests.take()

    def approve(
        self,
        vm: VM,
        event_ids: Iterable[str],
        *,
        event_types: Collection[EventType] | None = None,
        via: str = "endpoint",
    ) -> list[EventRecord]:
        """Approve events on behalf of ``vm``: all ids must be visible to it, or none count.

        ``event_types`` limits what is visible to the types the client's api-version shows;
        ``via`` is where the approval came from (``endpoint``, ``arm``), for the history.
        """
        self.catch_up()
        wanted = rules.visible_ids(self._pipe.views[vm.scope_id], vm.name, event_ids, event_types)
        for observer in self._observers:
            observer.approved(vm.name, wanted)
        if self._follower is not None:  # the leader applies it; answered once recorded
            self._follower.approve(vm.name, wanted, self.clock.now())
            return [self._seen.events[i] for i in wanted if i in self._seen.events]
        return self._approve(wanted, by=vm.name, via=via)

    # ------------------------------------------------------------ control plane

    def submit(self, request: OperationRequest) -> OperationRecord:
        """Carry out an operation request; returns its (first) operation."""
        self.catch_up()
        tx = self._tx()
        op = rules.submit(self._rules, tx, request)
        self._commit(tx)
        return self._work.operations[op.id]

    def approve_event(
        self, event_id: str, by: str = "control", via: str = "control"
    ) -> EventRecord:
        """Approve one event from the control plane."""
        self.catch_up()
        event = find_event(self._work.events, event_id)
        self._approve([event.id], by=by, via=via)
        return self._work.events.get(event.id, event)

    def set_policy(self, scopes: dict[str, ScopePolicy], via: str = "control") -> None:
        """Change scopes' platform features (auto-approval, notices) from their next
        operation on, all or none: written like any change (a restart keeps them, a
        follower gets them by replication); one history entry per scope."""
        tx = self._tx()
        for scope_id, policy in scopes.items():
            self.topology.scope(scope_id)  # UnknownName names an unknown scope
            tx.scopes[scope_id] = msgspec.structs.replace(
                self._work.scopes[scope_id], policy=policy
            )
            tx.log("scope.policy", scope_id=scope_id, detail={"via": via, **asdict(policy)})
        self._commit(tx)

    def note(
        self, kind: str, notes: Sequence[tuple[str | None, str | None, dict[str, Any]]]
    ) -> None:
        """History entries for what happened outside the platform's state (an Event Grid
        delivery: ``(scope_id, event_id, detail)`` each), in one transition written as
        bookkeeping (queued, never waited for). A follower writes nothing: its leader does."""
        if self._follower is not None or not notes:
            return
        tx = self._tx()
        for scope_id, event_id, detail in notes:
            tx.log(kind, scope_id=scope_id, event_id=event_id, detail=detail)
        self._commit(tx, bookkeeping=True)

    def policy(self, scope_id: str) -> ScopePolicy:
        """A scope's policy as published (changed at run time, else the fleet file's)."""
        if scope_id not in self._seen.scopes:
            raise NotFoundError(f"no scope named {scope_id!r}")
        return self._seen.policy(scope_id)

    def start_event(self, event_id: str) -> OperationRecord:
        """Start an event's operation now, without waiting for approvals or NotBefore."""
        self.catch_up()
        event = find_event(self._work.events, event_id)
        next_event_phase(EventPhase(event.status.value), Step.START, f"event {event.id}")
        tx = self._tx()
        rules.start_operation(tx, self._work.operations[event.operation_id], reason="forced")
        self._commit(tx)
        return self._work.operations[event.operation_id]

    def cancel_event(self, event_id: str) -> EventRecord:
        """Cancel a Scheduled event: it disappears with no impact on its VMs."""
        self.catch_up()
        event = find_event(self._work.events, event_id)
        next_event_phase(EventPhase(event.status.value), Step.CANCEL, f"event {event.id}")
        tx = self._tx()
        rules.drop_event(self._rules, tx, event, "event.canceled")
        self._commit(tx)
        return event

    def complete_event(self, event_id: str) -> EventRecord:
        """End a Started event now (its impact is over); it disappears."""
        self.catch_up()
        event = find_event(self._work.events, event_id)
        next_event_phase(EventPhase(event.status.value), Step.REMOVE, f"event {event.id}")
        tx = self._tx()
        rules.remove_events(tx, [event], "event.completed")
        rules.settle_operation(self._rules, tx, self._work.operations[event.operation_id])
        self._commit(tx)
        return event

    def reset(self) -> dict[str, Any]:
        """Start the next drill from a fresh fleet (``rules.reset_fleet``): events,
        operations and rollouts gone, deleted VMs back, history kept with a
        ``fleet.reset`` entry, every scope's incarnation one higher. Returns what went."""
        self.catch_up()
        tx = self._tx()
        detail = rules.reset_fleet(tx)
        self._commit(tx)
        return detail

    # ------------------------------------------------------------------- time

    def advance(self, seconds: float) -> float:
        """Move a virtual clock forward and run every timer that came due, in order.

        The new position is written first, so a restart never moves virtual time back.
        With a threaded journal use ``advance_durably`` (this one does not wait)."""
        self.clock.check_jump(seconds)
        self._commit(self._tx(), clock_position=self.clock.now() + seconds)
        self.clock.jump(seconds)
        self.run_due()
        return self.clock.now()

    async def advance_durably(self, seconds: float) -> float:
        """``advance``, answering only once the new time and what it fired are durable."""
        self.clock.check_jump(seconds)
        self._commit(self._tx(), clock_position=self.clock.now() + seconds)
        await self.durable()
        self.clock.jump(seconds)
        await self.relayed_first()
        self.run_due()
        await self.durable()
        return self.clock.now()

    def run_due(self, until: float | None = None) -> int:
        """Fire every timer due by now (or by ``until``, if earlier; by default no later
        than the relayed approvals were applied: ``apply_relayed_first``), in order;
        timers due at the same instant fire in one transition (one incarnation step).
        Returns how many timers fired.

        A write that fails stops it (the timers stay due and are retried a moment later);
        it never raises for that, so a reader that caught up still gets its document.
        A follower fires nothing: its leader does."""
        if self._follower is not None or self._pipe.writes_on_hold() or not self.standing.current():
            return 0
        fired = 0
        now = self._due_by() if until is None else min(until, self.clock.now())
        timers, active = self._pipe.timers, self._work.active
        while (at := timers.next_due(active)) is not None and at <= now:
            tx = self._tx(at)
            for op in timers.pop_due(at, active):
                op = tx.operations.get(op.id, op)
                if op.state is OperationState.SCHEDULED:
                    rules.start_operation(tx, op, reason="not_before")
                elif op.state is OperationState.STARTED:
                    rules.finish_operation(self._rules, tx, op)
                fired += 1
            try:
                self._commit(tx)
            except StoreUnavailable as exc:
                log.warning("timers due at %s wait for the store: %s", at, exc)
                break
        return fired

    def _due_by(self) -> float:
        """The instant up to which timers may fire now."""
        now = self.clock.now()
        return now if self._apply_relayed is None else min(now, self._relayed_until)

    # ------------------------------------------------------- leading, following

    def apply_relayed_first(self, apply: Callable[[], Awaitable[object]] | None) -> None:
        """A leader with followers: ``apply`` applies every approval they recorded (as of
        when each was made) and then calls ``relayed_applied``; timers fire only up to
        where it last got (``relayed_first`` calls it when one is due past that), so that
        a NotBefore does not swallow an approval answered 200 before it. None: no bound."""
        self._apply_relayed = apply
        self._relayed_until = -math.inf

    def relayed_applied(self, until: float) -> None:
        """Every approval followers recorded by ``until`` (the clock) is applied.

        Recorded means committed: an approval a follower stamped just before ``until``
        whose insert commits after the leader's read (the insert's latency, milliseconds)
        can still find its NotBefore fired, and is then moot, as one relayed after it."""
        self._relayed_until = max(self._relayed_until, until)

    async def relayed_first(self) -> None:
        """Apply the relayed approvals when a timer is due past where that was last done
        (nothing to do without followers); ``StoreUnavailable`` when they cannot be read."""
        if self._apply_relayed is None or self._follower is not None:
            return
        due = self.next_due()
        if due is not None and self._relayed_until < due <= self.clock.now():
            await self._apply_relayed()

    @property
    def leading(self) -> bool:
        """False while this process follows another one's changes."""
        return self._follower is None

    def follow(self, relay: Relay) -> None:
        """Stop writing: from now on the state moves only by ``replicate``/``reload``,
        and a VM's approvals and requests go to the leader through ``relay``."""
        self._follower = self._relayed = Follower(relay, self.config)
        self.replicated = True

    def lead(
        self, snapshot: Snapshot, journal: Journal, *, clock_position: float | None = None
    ) -> None:
        """Become the writer: start over from ``snapshot`` (the database as the previous
        leader left it), then write through ``journal``."""
        self.reload(snapshot, clock_position=clock_position)
        self._pipe.use_journal(journal)
        self._follower = None

    def reload(self, snapshot: Snapshot, *, clock_position: float | None = None) -> None:
        """Replace the whole state by ``snapshot`` (a follower that missed changes); a
        virtual clock moves on to ``clock_position`` (where the leader's stood)."""
        self._follow_clock(clock_position)
        self._pipe.reload(snapshot)
        self._work = self._pipe.work
        self._seen = self._pipe.published
        self._remember_requests(self._work.scopes.values())
        for observer in self._observers:
            observer.reloaded(self._seen.events.values())
        for listener in list(self._reload_listeners):
            listener()

    def replicate(self, batch: Sequence[Changes]) -> None:
        """Apply changes the leader made durable, in order (a virtual clock follows the
        leader's: it jumps to each position a change carries)."""
        self._pipe.replicate(batch)
        for changes in batch:
            self._remember_requests(changes.scopes)
            self._follow_clock(changes.clock_position)

    def approve_relayed(
        self, vm_name: str, event_ids: Iterable[str], *, at: float | None = None
    ) -> list[EventRecord]:
        """Apply an approval a follower recorded: events already approved, started or
        gone are skipped (applying a request twice changes nothing).

        ``at``: when the follower accepted it, for an approval that waited while nobody
        led: the timers due by then fire first, then it is applied as of then, before the
        timers that came due later (a NotBefore that passed while the leader was frozen
        does not swallow an approval made before it). None: now, after every due timer."""
        if at is None:
            self.catch_up()
        else:  # (never before the timers already fired for followers' approvals)
            at = min(max(at, self._relayed_until), self.clock.now())
            self.run_due(until=at)
        live = rules.relayed_ids(self.topology, self._work, vm_name, event_ids)
        return self._approve(live, by=vm_name, via="endpoint", at=at) if live else []

    def note_relayed_requests(self, requests: Iterable[tuple[str, str, float]]) -> None:
        """Merge followers' last requests of scopes, as (scope, VM, at), enabling the
        scopes that were off, in one transition: a fleet arriving at a follower relays a
        first request per scope, thousands at once, and a transition each would hold the
        loop for all of them (the caller hands them over in slices)."""
        tx: Tx | None = None
        seen: dict[str, float] = {}  # kept once the transition is written (retried if not)
        for scope_id, vm_name, at in requests:
            if scope_id not in self._work.scopes:
                continue
            last = seen.get(scope_id, self._last_seen.get(scope_id))
            enabled = self.config.enablement == "always" or (
                last is not None and at - last < self._idle_window
            )
            if last is None or at > last:
                seen[scope_id] = at
            staged = tx.scopes.get(scope_id) if tx is not None else None
            persisted = (staged or self._work.scopes[scope_id]).last_request_at
            if persisted is not None and at <= persisted:
                continue
            if enabled and persisted is not None and at - persisted < self._persist_every:
                continue
            if tx is None:
                tx = self._tx()
            self._stage_scope_request(tx, scope_id, vm_name, at=at, enables=not enabled)
        if tx is not None:
            self._commit(tx, bookkeeping=True)
        self._last_seen.update(seen)

    # ------------------------------------------------------------------ inside

    def _tx(self, at: float | None = None) -> Tx:
        """A new transition at ``at`` (default: now) on the working state."""
        return Tx(self.clock.now() if at is None else at, self._work)

    def _commit(
        self, tx: Tx, *, bookkeeping: bool = False, clock_position: float | None = None
    ) -> Commit | None:
        if self._follower is not None:
            raise StoreUnavailable(
                "this process follows the fleet's leader and changes nothing itself; "
                "send the request to the leader (see forewarn status)"
            )
        if not self.standing.current():
            raise StoreUnavailable(
                "this process has not heard from the fleet's database lately and may no "
                "longer lead; it changes nothing until it knows (retry in a moment)"
            )
        changes = rules.seal(self._rules, tx, clock_position)
        return self._pipe.commit(changes, bookkeeping=bookkeeping)

    def _approve(
        self, event_ids: list[str], by: str, via: str = "control", at: float | None = None
    ) -> list[EventRecord]:
        tx = self._tx(at)
        out = rules.approve(tx, event_ids, by, via)
        if tx.history:
            self._commit(tx)
        return out

    def _note_scope_request(self, tx: Tx, scope_id: str, vm_name: str, *, enables: bool) -> None:
        """Persist a scope's last request, made at the transition's time; bookkeeping:
        queued, never waited for."""
        self._stage_scope_request(tx, scope_id, vm_name, at=tx.at, enables=enables)
        self._commit(tx, bookkeeping=True)

    def _stage_scope_request(
        self, tx: Tx, scope_id: str, vm_name: str, *, at: float, enables: bool
    ) -> None:
        """Add a scope's last request, made at ``at``, to ``tx``."""
        tx.scopes[scope_id] = msgspec.structs.replace(
            self._work.scopes[scope_id], last_request_at=at
        )
        if enables:
            tx.log("scope.enabled", scope_id=scope_id, detail={"vm": vm_name})

    def _remember_requests(self, states: Iterable[ScopeState]) -> None:
        for state in states:
            at = state.last_request_at
            if at is not None and at > self._last_seen.get(state.scope_id, -1.0):
                self._last_seen[state.scope_id] = at

    def _follow_clock(self, position: float | None) -> None:
        if position is not None and self.clock.is_virtual and position > self.clock.now():
            self.clock.jump(position - self.clock.now())
