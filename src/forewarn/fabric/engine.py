"""The lifecycle engine: operations become per-scope events that move through their life.

Every change goes through one path: build a ``_Tx`` of new records on the working
state, and hand it to the pipeline (``pipeline.py``), which bumps exactly the
incarnations of the scope documents that changed, has the journal write it in one
transaction, and only then publishes it to readers. A crash at any point leaves either
the old state or the new one on disk, never half of each; a failed write changes nothing.

Readers (``view``, ``events``, ``operations``...) see the published state only; the
transitions (``submit``, ``approve``, timers...) build on the working state.

The lifecycle rules that build a transition live in ``transitions.py``; leading and
following in a scaled-out fleet in ``following.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

import msgspec

from forewarn.contract import EventType
from forewarn.fabric.catalogue import CATALOGUE, spec_for
from forewarn.fabric.clock import Clock
from forewarn.fabric.errors import (
    EventNotVisible,
    NotFoundError,
    StoreUnavailable,
)
from forewarn.fabric.following import Following
from forewarn.fabric.journal import InlineJournal, Journal
from forewarn.fabric.lifecycle import EventPhase, Step, next_event_phase
from forewarn.fabric.pipeline import Pipeline
from forewarn.fabric.planner import OperationRequest, plan_request
from forewarn.fabric.ports import Store
from forewarn.fabric.reactions import ReactionTracker
from forewarn.fabric.records import (
    Changes,
    EventRecord,
    HistoryEntry,
    OperationRecord,
    OperationState,
    RolloutRecord,
)
from forewarn.fabric.relay import Relay
from forewarn.fabric.scope_view import ScopeView
from forewarn.fabric.transitions import Tx, find_event, new_event_id, new_token, request_options
from forewarn.fleet.topology import VM, ScopePolicy, Topology

__all__ = ["Fabric", "FabricConfig", "ScopeView"]

log = logging.getLogger(__name__)

DAY = 24 * 3600.0


@dataclass(frozen=True, slots=True)
class FabricConfig:
    """Platform-wide settings.

    ``time_scale`` divides every catalogue duration (notice, impact, hold, idle timeout);
    the announced DurationInSeconds stays as in production.
    ``enablement`` "on-first-request" is the faithful behaviour; "always" treats every
    scope as enabled from the start.
    """

    time_scale: float = 1.0
    enablement: Literal["on-first-request", "always"] = "on-first-request"
    idle_disable_seconds: float = DAY
    last_request_persist_seconds: float = 60.0
    preview_user_operation_limit: int = 10

    def __post_init__(self) -> None:
        if not self.time_scale > 0:
            raise ValueError("time scale must be positive")

    def scaled(self, seconds: float) -> float:
        """A catalogue duration at this time scale."""
        return seconds / self.time_scale


class Fabric(Following):
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
        makes event ids, ``new_token`` operation and rollout ids (tests pass deterministic
        ones)."""
        self.topology = topology
        self.clock = clock
        self.config = config or FabricConfig()
        self._store = store
        self._new_id = new_id
        self._new_token = new_token
        user_kinds = frozenset(s.kind.value for s in CATALOGUE.values() if s.user_initiated)
        self._pipe = Pipeline(topology, store.load(), journal or InlineJournal(store), user_kinds)
        self._work = self._pipe.work
        self._seen = self._pipe.published
        self._last_seen: dict[str, float] = {
            sid: s.last_request_at
            for sid, s in self._work.scopes.items()
            if s.last_request_at is not None
        }
        self._idle_window = self.config.scaled(self.config.idle_disable_seconds)
        self._persist_every = self.config.last_request_persist_seconds
        #: Set while this process follows the leader of a scaled-out fleet (it never writes).
        self._relay: Relay | None = None
        self._relayed_at: dict[str, float] = {}
        #: True in a scaled-out fleet: views may lag behind another front-end's.
        self.replicated = False
        self._reload_listeners: list[Callable[[], None]] = []
        #: Who saw and approved which event when (the rehearsal report's facts).
        self.reactions = ReactionTracker(
            topology, clock, store.save_reactions, store.reactions, store.polls,
            self._operation_kind,
        )  # fmt: skip
        self._pipe.on_publish(self.reactions.published)
        self._last_requests = self.reactions.last_requests

    # ----------------------------------------------------------------- reading

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

    def rollouts(self) -> list[RolloutRecord]:
        """Every rollout (update-domain walk)."""
        return list(self._seen.rollouts.values())

    def is_deleted(self, vm_name: str) -> bool:
        """True once a Preempt or Terminate has removed the VM."""
        return vm_name in self._seen.deleted


    def vm_status(self, vm_name: str) -> str:
        """``running``, ``deleted``, or the impact under way (``frozen``, ``rebooting``...)."""
        if vm_name in self._seen.deleted:
            return "deleted"
        now = self.clock.now()
        for op in self._seen.started():
            if (
                op.started_at is not None
                and now < op.started_at + op.impact_seconds
                and vm_name in op.vms
                and vm_name not in op.spared_vms
            ):
                return _IMPACT_STATUS.get(spec_for(op.kind).event_type.value, "impacted")
        return "running"

    def vm_statuses(self) -> dict[str, str]:
        """Every VM that is not ``running``, with its ``vm_status``: one pass over the
        started operations (the dashboard asks about the whole fleet every second)."""
        now = self.clock.now()
        out = dict.fromkeys(self._seen.deleted, "deleted")
        for op in self._seen.started():
            if op.started_at is None or now >= op.started_at + op.impact_seconds:
                continue
            status = _IMPACT_STATUS.get(spec_for(op.kind).event_type.value, "impacted")
            for name in op.vms:
                if name not in op.spared_vms:
                    out.setdefault(name, status)
        return out

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
        if self._relay is not None:
            return
        due = self._pipe.timers.next_due(self._work.active)
        if due is not None and self.clock.now() >= due:
            self.run_due()

    # ------------------------------------------------------------ durability

    async def durable(self) -> None:
        """Wait until every change made so far is durable and visible; raises
        ``StoreUnavailable`` when it could not be written (then nothing changed).
        On a follower: until every approval it relayed is durably recorded."""
        if self._relay is not None:
            await self._relay.settled()
            return
        await self._pipe.durable()

    def store_error(self) -> StoreUnavailable | None:
        """Why the last write failed, until a write succeeds again (None: healthy)."""
        return self._pipe.error

    def probe_store(self) -> None:
        """Try a harmless write, so a store that recovered is noticed without traffic."""
        self._pipe.probe()

    def writes_in_flight(self) -> int:
        """Changes queued for the disk or being written (a follower: relayed approvals)."""
        if self._relay is not None:
            return self._relay.pending()
        return self._pipe.in_flight()

    def close(self) -> None:
        """Write what is queued (reactions included) and stop the journal."""
        self.reactions.flush_now()
        self._pipe.close()

    # ------------------------------------------------------------- the endpoint

    def note_request(self, vm: VM) -> bool:
        """Record that a VM asked for its document; True when this enabled its scope.

        The common case (scope enabled, last request persisted recently) writes nothing;
        otherwise the write is queued, never waited for: bookkeeping is not worth a VM's
        wait, and a failed one is retried on a later request."""
        now = self.clock.now()
        self._last_requests[vm.name] = now  # the reaction tracker's "last poll"
        scope_id = vm.scope_id
        last = self._last_seen.get(scope_id)
        recent = last is not None and now - last < self._idle_window
        self._last_seen[scope_id] = now
        if self._relay is not None:
            return self._relay_request(vm, now, recent)
        persisted = self._work.scopes[scope_id].last_request_at
        if recent and persisted is not None and now - persisted < self._persist_every:
            return False
        was_enabled = recent or self.config.enablement == "always"
        if was_enabled and self._pipe.writes_on_hold():
            return False
        tx = Tx(now)
        tx.scopes[scope_id] = msgspec.structs.replace(
            self._work.scopes[scope_id], last_request_at=now
        )
        if not was_enabled:
            tx.log("scope.enabled", scope_id=scope_id, detail={"vm": vm.name})
        self._commit(tx, bookkeeping=True)
        return not was_enabled

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
        view = self._pipe.views[vm.scope_id]
        visible = {
            e.event_id.upper(): e.event_id
            for e in view.events_for(vm.name)
            if event_types is None or e.event_type in event_types
        }
        wanted: list[str] = []
        for raw in event_ids:
            event_id = visible.get(raw.upper())
            if event_id is None:
                shown = raw if len(raw) <= 64 else raw[:64] + "..."
                raise EventNotVisible(f"EventId {shown} is not a scheduled event of this VM")
            if event_id not in wanted:
                wanted.append(event_id)
        self.reactions.approved(vm.name, wanted)
        if self._relay is not None:  # the leader applies it; answered once recorded
            self._relay.approve(vm.name, wanted)
            return [self._seen.events[i] for i in wanted if i in self._seen.events]
        return self._approve(wanted, by=vm.name, via=via)

    # ----------------------------------------------------------- control plane

    def submit(self, request: OperationRequest) -> OperationRecord:
        """Carry out an operation request; returns its (first) operation."""
        self.catch_up()  # timers that are due fire first
        now = self.clock.now()
        plan = plan_request(
            request,
            self.topology,
            self._work.deleted.__contains__,
            self._min_notice,
            time_scale=self.config.time_scale,
        )
        self._check_in_progress(plan, now)
        self._check_preview_limit(plan)
        tx = Tx(now)
        rollout_id = None
        if plan.rolling:
            rollout_id = f"rollout-{self._new_token()}"
            rollout = RolloutRecord(
                id=rollout_id,
                kind=plan.spec.kind.value,
                scope_id=request.scope or "",
                batches=plan.batches,
                next_batch=1,
                current_operation=None,
                options=request_options(request),
            )
            tx.rollouts[rollout_id] = rollout
            tx.log(
                "rollout.created",
                scope_id=rollout.scope_id,
                detail={"id": rollout_id, "kind": rollout.kind, "batches": len(plan.batches)},
            )
        op = self._create_operation(tx, plan.spec, request, plan.batches[0], rollout_id)
        if rollout_id is not None:
            tx.rollouts[rollout_id] = msgspec.structs.replace(
                tx.rollouts[rollout_id], current_operation=op.id
            )
        self._commit(tx)
        return self._work.operations[op.id]

    def approve_event(
        self, event_id: str, by: str = "control", via: str = "control"
    ) -> EventRecord:
        """Approve one event from the control plane."""
        self.catch_up()  # timers that are due fire first
        event = find_event(self._work.events, event_id)
        self._approve([event.id], by=by, via=via)
        return self._work.events.get(event.id, event)

    def set_policy(self, scope_id: str, policy: ScopePolicy, via: str = "control") -> None:
        """Change a scope's platform features (auto-approval, terminate notice) from the
        next operation on; one history entry. Kept in memory: a restart reads the fleet's."""
        scope = self.topology.scope(scope_id)
        tx = Tx(self.clock.now())
        tx.log("scope.policy", scope_id=scope_id, detail={"via": via, **asdict(policy)})
        self._commit(tx)
        self.topology.scopes[scope_id] = replace(scope, policy=policy)

    def start_event(self, event_id: str) -> OperationRecord:
        """Start an event's operation now, without waiting for approvals or NotBefore."""
        self.catch_up()  # timers that are due fire first
        event = find_event(self._work.events, event_id)
        next_event_phase(EventPhase(event.status.value), Step.START, f"event {event.id}")
        tx = Tx(self.clock.now())
        self._start_operation(tx, self._work.operations[event.operation_id], reason="forced")
        self._commit(tx)
        return self._work.operations[event.operation_id]

    def cancel_event(self, event_id: str) -> EventRecord:
        """Cancel a Scheduled event: it disappears with no impact on its VMs."""
        self.catch_up()  # timers that are due fire first
        event = find_event(self._work.events, event_id)
        next_event_phase(EventPhase(event.status.value), Step.CANCEL, f"event {event.id}")
        tx = Tx(self.clock.now())
        self._drop_event(tx, event, "event.canceled")
        self._commit(tx)
        return event

    def complete_event(self, event_id: str) -> EventRecord:
        """End a Started event now (its impact is over); it disappears."""
        self.catch_up()  # timers that are due fire first
        event = find_event(self._work.events, event_id)
        next_event_phase(EventPhase(event.status.value), Step.REMOVE, f"event {event.id}")
        tx = Tx(self.clock.now())
        self._remove_events(tx, [event], "event.completed")
        self._settle_operation(tx, self._work.operations[event.operation_id])
        self._commit(tx)
        return event

    def advance(self, seconds: float) -> float:
        """Move a virtual clock forward and run every timer that came due, in order.

        The new position is written first, so a restart never moves virtual time back.
        With a threaded journal use ``advance_durably`` (this one does not wait)."""
        self.clock.check_jump(seconds)
        self._commit(Tx(self.clock.now()), clock_position=self.clock.now() + seconds)
        self.clock.jump(seconds)
        self.run_due()
        return self.clock.now()

    async def advance_durably(self, seconds: float) -> float:
        """``advance``, answering only once the new time and what it fired are durable."""
        self.clock.check_jump(seconds)
        self._commit(Tx(self.clock.now()), clock_position=self.clock.now() + seconds)
        await self.durable()
        self.clock.jump(seconds)
        self.run_due()
        await self.durable()
        return self.clock.now()

    def run_due(self) -> int:
        """Fire every timer due by now, in order; timers due at the same instant fire in one
        transition (one incarnation step). Returns how many timers fired.

        A write that fails stops it (the timers stay due and are retried a moment later);
        it never raises for that, so a reader that caught up still gets its document.
        A follower fires nothing: its leader does."""
        if self._relay is not None or self._pipe.writes_on_hold():
            return 0
        fired = 0
        now = self.clock.now()
        timers, active = self._pipe.timers, self._work.active
        while (at := timers.next_due(active)) is not None and at <= now:
            tx = Tx(at)
            for op in timers.pop_due(at, active):
                op = tx.operations.get(op.id, op)
                if op.state is OperationState.SCHEDULED:
                    self._start_operation(tx, op, reason="not_before")
                elif op.state is OperationState.STARTED:
                    self._finish_operation(tx, op)
                fired += 1
            try:
                self._commit(tx)
            except StoreUnavailable as exc:
                log.warning("timers due at %s wait for the store: %s", at, exc)
                break
        return fired


_IMPACT_STATUS = {
    "Freeze": "frozen",
    "Reboot": "rebooting",
    "Redeploy": "redeploying",
    "Preempt": "evicting",
    "Terminate": "terminating",
}
