"""Build a change, write it, then make it visible: the engine's commit pipeline.

A transition is applied at once to the *working* state, so the next transition builds on
it, and handed to the journal with what it owes outside (``Owing``: its outbox). Only
when the journal reports it durable does it reach the *published* state and the scope
views that readers (the endpoint, the control API) see. If a write fails, every change
still in flight is rolled back out of the working state (they were built on the failed
one) and their callers get ``StoreUnavailable``: nothing changed, and readers never saw
any of it.

A follower of a scaled-out fleet writes nothing: ``replicate`` applies what the leader
made durable (with the leader's incarnations) and ``reload`` starts over from a snapshot.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Sequence

import msgspec

from forewarn.contract import RenderableEvent
from forewarn.fabric.errors import StoreUnavailable
from forewarn.fabric.journal import Commit, Journal
from forewarn.fabric.ports import Owing
from forewarn.fabric.records import Changes, HistoryEntry, ScopeState, Snapshot
from forewarn.fabric.scope_view import ScopeView
from forewarn.fabric.state import FabricState, TimerHeap
from forewarn.fleet.topology import Topology

__all__ = ["Pipeline"]

#: After a failed write, timers and bookkeeping wait this long before writing again.
RETRY_SECONDS = 1.0


class Pipeline:
    """Working and published state, and the journal between them."""

    def __init__(
        self,
        topology: Topology,
        snapshot: Snapshot,
        journal: Journal,
        user_kinds: frozenset[str],
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.topology = topology
        self._user_kinds = user_kinds
        self._load(snapshot)
        self._journal = journal
        self._monotonic = monotonic
        self._inflight: deque[Commit] = deque()
        self._generation = 0
        self._change_listeners: list[Callable[[], None]] = []
        self._history_listeners: list[Callable[[list[HistoryEntry]], None]] = []
        self._publish_listeners: list[Callable[[Changes], None]] = []
        self._owing: list[Owing] = []
        self.error: StoreUnavailable | None = None
        self._permanent: StoreUnavailable | None = None
        self._hold_until = 0.0
        self._view_waiters: dict[str, list[tuple[int, asyncio.Future[None]]]] = {}
        journal.start(self._settle)

    def _load(self, snapshot: Snapshot) -> None:
        """Working and published state, timers and views, as of ``snapshot``."""
        self.work = FabricState(self.topology, self._user_kinds)
        self.published = FabricState(self.topology, self._user_kinds)
        loaded = Changes(
            operations=snapshot.operations,
            events=snapshot.events,
            rollouts=snapshot.rollouts,
            scopes=snapshot.scopes,
            deleted_vms=snapshot.deleted_vms,
        )
        self.work.apply(loaded)
        self.published.apply(loaded)
        self.timers = TimerHeap()
        for op in self.work.active.values():
            self.timers.track(op)
        self.views: dict[str, ScopeView] = {}
        self._rendered: dict[str, tuple[RenderableEvent, ...]] = {}
        for scope_id in self.topology.scopes:
            rendered = self.work.rendered(scope_id)
            self._rendered[scope_id] = rendered
            self.views[scope_id] = self._view(scope_id, self.work.scopes[scope_id], rendered)

    # ----------------------------------------------------------------- listeners

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` whenever the working state moved (or was rolled back)."""
        self._change_listeners.append(listener)

    def on_history(self, listener: Callable[[list[HistoryEntry]], None]) -> None:
        """Call ``listener`` with each durable change's history entries."""
        self._history_listeners.append(listener)

    def on_publish(self, listener: Callable[[Changes], None]) -> None:
        """Call ``listener`` with each change once it is durable and visible."""
        self._publish_listeners.append(listener)

    def owe(self, owing: Owing) -> None:
        """Ask ``owing`` what each change owes, before it is written (``Owing``)."""
        self._owing.append(owing)

    # ------------------------------------------------------------------ commits

    def commit(self, changes: Changes, *, bookkeeping: bool = False) -> Commit | None:
        """Apply ``changes`` to the working state and queue them for writing.

        Scope incarnations are bumped here, exactly for the scopes whose document changed.
        Raises ``StoreUnavailable`` (having changed nothing) when the store refuses writes
        for good, or when an inline journal failed to write.
        """
        if self._permanent is not None:
            raise self._permanent.again()
        for owing in self._owing:  # written with the change: a crash keeps both or neither
            owed = owing.owed(changes, self.work.events)
            if owed:
                changes.outbox = [*changes.outbox, *owed]
        touched = {e.scope_id for e in changes.events}
        for event_id in changes.removed_events:
            event = self.work.events.get(event_id)
            if event is not None:
                touched.add(event.scope_id)
        if changes.reset:  # every VM gets a new document, even one that looks the same
            touched = set(self.topology.scopes)
        new_states = {s.scope_id: s for s in changes.scopes}
        self.work.apply(changes)
        views: dict[str, ScopeView] = {}
        for scope_id in touched:
            rendered = self.work.rendered(scope_id)
            if rendered == self._rendered[scope_id] and not changes.reset:
                continue
            base = new_states.get(scope_id, self.work.scopes[scope_id])
            state = msgspec.structs.replace(  # the policy and last request stay
                base, incarnation=self.work.scopes[scope_id].incarnation + 1
            )
            new_states[scope_id] = state
            self.work.scopes[scope_id] = state
            self._rendered[scope_id] = rendered
            views[scope_id] = self._view(scope_id, state, rendered)
        changes.scopes = list(new_states.values())
        for op in changes.operations:
            self.timers.track(op)
        if changes.empty():
            return None
        commit = Commit(changes, self._generation, bookkeeping=bookkeeping, views=views)
        self._inflight.append(commit)
        self._journal.submit(commit)
        self._notify_change()
        if commit.done and commit.error is not None and not bookkeeping:
            raise commit.error.again()
        return commit

    def _view(
        self, scope_id: str, state: ScopeState, rendered: tuple[RenderableEvent, ...]
    ) -> ScopeView:
        return ScopeView(self.topology.scopes[scope_id], state.incarnation, rendered)

    def _settle(self, commits: Sequence[Commit], error: StoreUnavailable | None) -> None:
        """The journal's report, on the engine's thread, in submission order."""
        probes = [c for c in commits if c.generation < 0]
        live = [c for c in commits if c.generation == self._generation and not c.done]
        for probe in probes:
            probe.settle(error)
        if error is None:
            for commit in live:
                self._publish(commit)
            self.error = None  # a write went through: the store works again
            return
        if not live and not probes:
            return  # commits already rolled back with the failure that came first
        if not live and self.error is not None:
            return  # a probe queued behind that failure: keep the failure's reason
        self.error = error
        self._hold_until = self._monotonic() + RETRY_SECONDS
        if error.permanent:
            self._permanent = error
        if live:
            self._rollback(error)

    def _publish(self, commit: Commit) -> None:
        if self._inflight and self._inflight[0] is commit:
            self._inflight.popleft()
        else:  # pragma: no cover - the journal settles in order
            self._inflight.remove(commit)
        changes = commit.changes
        self.published.apply(changes)
        self.views.update(commit.views)
        self._wake_view_waiters(commit.views)
        commit.settle(None)
        for listener in list(self._publish_listeners):
            listener(changes)
        if changes.history:
            for history_listener in list(self._history_listeners):
                history_listener(changes.history)

    def _rollback(self, error: StoreUnavailable) -> None:
        """Undo every change in flight: each was built on the one that failed."""
        failed = list(self._inflight)
        self._inflight.clear()
        self._generation += 1
        self._journal.discard_queued()
        self.work.restore(self.published, [c.changes for c in failed])
        if any(c.changes.reset for c in failed):  # every live operation needs its timer
            for op in self.work.active.values():
                self.timers.track(op)
        for commit in failed:
            for scope_id in commit.views:
                self._rendered[scope_id] = self.views[scope_id].events
            for op in commit.changes.operations:
                restored = self.work.active.get(op.id)
                if restored is not None:
                    self.timers.track(restored)
        for commit in failed:
            commit.settle(error)
        self._notify_change()

    def _notify_change(self) -> None:
        for listener in list(self._change_listeners):
            listener()

    # ------------------------------------------------------------- replication

    def use_journal(self, journal: Journal) -> None:
        """Write through ``journal`` from now on (a process that became the leader)."""
        self._journal = journal
        journal.start(self._settle)

    def replicate(self, batch: Sequence[Changes]) -> None:
        """Apply changes another process (the leader) made durable.

        Working and published state move together and each touched scope gets the view
        the leader published, with the leader's incarnation: a follower never computes
        incarnations of its own. Listeners hear of it as of a change of this process.
        """
        assert not self._inflight, "a process that writes does not replicate"
        for changes in batch:
            touched = {e.scope_id for e in changes.events}
            for event_id in changes.removed_events:
                event = self.published.events.get(event_id)
                if event is not None:
                    touched.add(event.scope_id)
            touched.update(s.scope_id for s in changes.scopes if s.scope_id in self.views)
            self.work.apply(changes)
            self.published.apply(changes)
            for op in changes.operations:
                self.timers.track(op)
            views: dict[str, ScopeView] = {}
            for scope_id in touched:
                state = self.published.scopes[scope_id]
                rendered = self.published.rendered(scope_id)
                if (
                    state.incarnation == self.views[scope_id].incarnation
                    and rendered == self._rendered[scope_id]
                ):
                    continue
                self._rendered[scope_id] = rendered
                views[scope_id] = self._view(scope_id, state, rendered)
            self.views.update(views)
            self._wake_view_waiters(views)
            for listener in list(self._publish_listeners):
                listener(changes)
            if changes.history:
                for history_listener in list(self._history_listeners):
                    history_listener(changes.history)
        self._notify_change()

    def reload(self, snapshot: Snapshot) -> None:
        """Start over from ``snapshot`` (a follower that missed changes, a new leader).

        Changes still in flight are given up (their callers get ``StoreUnavailable``);
        views are replaced whole, each scope keeping the incarnation the snapshot holds.
        """
        abandoned = list(self._inflight)
        self._inflight.clear()
        self._generation += 1
        self._load(snapshot)
        self.error = None
        self._permanent = None
        self._hold_until = 0.0
        for commit in abandoned:
            commit.settle(StoreUnavailable("not written: this process stopped leading the fleet"))
        self._wake_view_waiters(self.views)
        self._notify_change()

    async def view_at_least(self, scope_id: str, incarnation: int, timeout: float) -> ScopeView:
        """The scope's view once its incarnation reaches ``incarnation``, or after
        ``timeout`` seconds whatever it is (a front-end behind another one catches up)."""
        view = self.views[scope_id]
        if view.incarnation >= incarnation:
            return view
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._view_waiters.setdefault(scope_id, []).append((incarnation, waiter))
        try:
            await asyncio.wait_for(asyncio.shield(waiter), timeout)
        except TimeoutError:
            pass
        finally:
            waiters = self._view_waiters.get(scope_id, [])
            if (incarnation, waiter) in waiters:
                waiters.remove((incarnation, waiter))
        return self.views[scope_id]

    def _wake_view_waiters(self, views: dict[str, ScopeView]) -> None:
        if not self._view_waiters:
            return
        for scope_id, view in views.items():
            waiters = self._view_waiters.get(scope_id)
            if not waiters:
                continue
            ready = [w for w in waiters if w[0] <= view.incarnation]
            for entry in ready:
                waiters.remove(entry)
                if not entry[1].done():
                    entry[1].set_result(None)

    # ------------------------------------------------------------- durability

    async def durable(self) -> None:
        """Wait until every change committed so far is durable and visible.

        Raises ``StoreUnavailable`` when one of them could not be written (then none of
        them was made)."""
        if not self._inflight:
            return
        last = self._inflight[-1]
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        last.waiters.append(waiter)
        await waiter

    def writes_on_hold(self) -> bool:
        """True for a moment after a failed write, and for good once the store refuses
        writes for good: timers and bookkeeping wait."""
        if self._permanent is not None:
            return True
        return self.error is not None and self._monotonic() < self._hold_until

    def probe(self) -> None:
        """Ask the journal to try a harmless write (clears ``error`` when it works)."""
        if self._permanent is None:
            self._journal.probe()

    def in_flight(self) -> int:
        """How many commits are queued or being written."""
        return len(self._inflight)

    def close(self) -> None:
        """Write what is queued and stop the journal."""
        self._journal.close()
