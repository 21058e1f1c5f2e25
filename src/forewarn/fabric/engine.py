"""The lifecycle engine: operations become per-scope events that move through their life.

Every change goes through one path: build a ``_Tx`` of new records on the working
state, and hand it to the pipeline (``pipeline.py``), which bumps exactly the
incarnations of the scope documents that changed, has the journal write it in one
transaction, and only then publishes it to readers. A crash at any point leaves either
the old state or the new one on disk, never half of each; a failed write changes nothing.

Readers (``view``, ``events``, ``operations``...) see the published state only; the
transitions (``submit``, ``approve``, timers...) build on the working state.

In a scaled-out fleet only the leader's fabric writes. Every other one ``follow``s: it
changes only by ``replicate`` (the leader's durable changes) or ``reload``, fires no timer,
and sends a VM's approvals and requests through a ``Relay`` (``relay.py``); the leader
applies them with ``approve_relayed`` and ``note_relayed_request``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from ..contract import EventStatus, EventType
from .catalogue import CATALOGUE, OperationSpec, spec_for
from .clock import Clock
from .errors import (
    Conflict,
    EventNotVisible,
    InvalidOperation,
    NotFoundError,
    StoreUnavailable,
)
from .journal import Commit, InlineJournal, Journal
from .lifecycle import EventPhase, Step, next_event_phase, next_operation_state
from .pipeline import Pipeline
from .planner import OperationRequest, Plan, group_key, plan_request
from .ports import Store
from .reactions import ReactionTracker
from .records import (
    Changes,
    EventRecord,
    HistoryEntry,
    OperationRecord,
    OperationState,
    RolloutRecord,
    ScopeState,
    Snapshot,
)
from .relay import Relay
from .topology import VM, Topology
from .views import ScopeView

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


@dataclass
class _Tx:
    """The records one transition writes, applied atomically by ``Fabric._commit``."""

    at: float
    operations: dict[str, OperationRecord] = field(default_factory=dict)
    events: dict[str, EventRecord] = field(default_factory=dict)
    removed: dict[str, EventRecord] = field(default_factory=dict)
    rollouts: dict[str, RolloutRecord] = field(default_factory=dict)
    scopes: dict[str, ScopeState] = field(default_factory=dict)
    deleted_vms: list[str] = field(default_factory=list)
    finished_rollout_batches: list[str] = field(default_factory=list)
    history: list[HistoryEntry] = field(default_factory=list)

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


def _new_event_id() -> str:
    return str(uuid.uuid4()).upper()


def _new_token() -> str:
    return uuid.uuid4().hex[:12]


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
        new_id: Callable[[], str] = _new_event_id,
        new_token: Callable[[], str] = _new_token,
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
        return _find_event(self._seen.events, event_id)

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

    def is_enabled(self, scope_id: str, now: float | None = None) -> bool:
        """Whether Scheduled Events are on for a scope (first request seen, not idle)."""
        if self.config.enablement == "always":
            return True
        last = self._last_seen.get(scope_id)
        if last is None:
            return False
        now = self.clock.now() if now is None else now
        return now - last < self._idle_window

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
        tx = _Tx(now)
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
    ) -> list[EventRecord]:
        """Approve events on behalf of ``vm``: all ids must be visible to it, or none count.

        ``event_types`` limits what is visible to the types the client's api-version shows.
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
        return self._approve(wanted, by=vm.name)

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
        tx = _Tx(now)
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
                options=_request_options(request),
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

    def approve_event(self, event_id: str, by: str = "control") -> EventRecord:
        """Approve one event from the control plane."""
        self.catch_up()  # timers that are due fire first
        event = _find_event(self._work.events, event_id)
        self._approve([event.id], by=by)
        return self._work.events.get(event.id, event)

    def start_event(self, event_id: str) -> OperationRecord:
        """Start an event's operation now, without waiting for approvals or NotBefore."""
        self.catch_up()  # timers that are due fire first
        event = _find_event(self._work.events, event_id)
        next_event_phase(EventPhase(event.status.value), Step.START, f"event {event.id}")
        tx = _Tx(self.clock.now())
        self._start_operation(tx, self._work.operations[event.operation_id], reason="forced")
        self._commit(tx)
        return self._work.operations[event.operation_id]

    def cancel_event(self, event_id: str) -> EventRecord:
        """Cancel a Scheduled event: it disappears with no impact on its VMs."""
        self.catch_up()  # timers that are due fire first
        event = _find_event(self._work.events, event_id)
        next_event_phase(EventPhase(event.status.value), Step.CANCEL, f"event {event.id}")
        tx = _Tx(self.clock.now())
        self._drop_event(tx, event, "event.canceled")
        self._commit(tx)
        return event

    def complete_event(self, event_id: str) -> EventRecord:
        """End a Started event now (its impact is over); it disappears."""
        self.catch_up()  # timers that are due fire first
        event = _find_event(self._work.events, event_id)
        next_event_phase(EventPhase(event.status.value), Step.REMOVE, f"event {event.id}")
        tx = _Tx(self.clock.now())
        self._remove_events(tx, [event], "event.completed")
        self._settle_operation(tx, self._work.operations[event.operation_id])
        self._commit(tx)
        return event

    def advance(self, seconds: float) -> float:
        """Move a virtual clock forward and run every timer that came due, in order.

        The new position is written first, so a restart never moves virtual time back.
        With a threaded journal use ``advance_durably`` (this one does not wait)."""
        self.clock.check_jump(seconds)
        self._commit(_Tx(self.clock.now()), clock_position=self.clock.now() + seconds)
        self.clock.jump(seconds)
        self.run_due()
        return self.clock.now()

    async def advance_durably(self, seconds: float) -> float:
        """``advance``, answering only once the new time and what it fired are durable."""
        self.clock.check_jump(seconds)
        self._commit(_Tx(self.clock.now()), clock_position=self.clock.now() + seconds)
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
            tx = _Tx(at)
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

    # ------------------------------------------------------------ scale-out

    @property
    def leading(self) -> bool:
        """False while this process follows another one's changes."""
        return self._relay is None

    def follow(self, relay: Relay) -> None:
        """Stop writing: from now on the state moves only by ``replicate``/``reload``,
        and a VM's approvals and requests go to the leader through ``relay``."""
        self._relay = relay
        self.replicated = True

    def lead(
        self, snapshot: Snapshot, journal: Journal, *, clock_position: float | None = None
    ) -> None:
        """Become the writer: start over from ``snapshot`` (the database as the previous
        leader left it), then write through ``journal``."""
        self.reload(snapshot, clock_position=clock_position)
        self._pipe.use_journal(journal)
        self._relay = None
        self._relayed_at.clear()

    def reload(self, snapshot: Snapshot, *, clock_position: float | None = None) -> None:
        """Replace the whole state by ``snapshot`` (a follower that missed changes); a
        virtual clock moves on to ``clock_position`` (where the leader's stood)."""
        self._follow_clock(clock_position)
        self._pipe.reload(snapshot)
        self._work = self._pipe.work
        self._seen = self._pipe.published
        for state in self._work.scopes.values():
            self._remember_request(state)
        self.reactions.reloaded(self._seen.events.values())
        for listener in list(self._reload_listeners):
            listener()

    def replicate(self, batch: Sequence[Changes]) -> None:
        """Apply changes the leader made durable, in order (a virtual clock follows the
        leader's: it jumps to each position a change carries)."""
        self._pipe.replicate(batch)
        for changes in batch:
            for state in changes.scopes:
                self._remember_request(state)
            self._follow_clock(changes.clock_position)

    def _follow_clock(self, position: float | None) -> None:
        if position is not None and self.clock.is_virtual and position > self.clock.now():
            self.clock.jump(position - self.clock.now())

    def _remember_request(self, state: ScopeState) -> None:
        at = state.last_request_at
        if at is not None and at > self._last_seen.get(state.scope_id, -1.0):
            self._last_seen[state.scope_id] = at

    def _relay_request(self, vm: VM, now: float, recent: bool) -> bool:
        """A follower's ``note_request``: tell the leader at most once per persist
        interval per scope (and at once when this request enables the scope)."""
        assert self._relay is not None
        was_enabled = recent or self.config.enablement == "always"
        last = self._relayed_at.get(vm.scope_id)
        if was_enabled and last is not None and now - last < self._persist_every:
            return False
        self._relayed_at[vm.scope_id] = now
        self._relay.note_request(vm.scope_id, vm.name, now)
        return not was_enabled

    def approve_relayed(self, vm_name: str, event_ids: Iterable[str]) -> list[EventRecord]:
        """Apply an approval a follower recorded: events already approved, started or
        gone are skipped (applying a request twice changes nothing)."""
        self.catch_up()
        vm = self.topology.vms.get(vm_name)
        if vm is None:
            return []
        live = [
            i for i in event_ids
            if (e := self._work.events.get(i)) is not None
            and e.scope_id == vm.scope_id
            and (not self.topology.scopes[e.scope_id].policy.per_vm_visibility
                 or vm_name in e.resources)
        ]  # fmt: skip
        return self._approve(live, by=vm_name) if live else []

    def note_relayed_request(self, scope_id: str, vm_name: str, at: float) -> None:
        """Merge a follower's last request of a scope (enabling the scope if it was off)."""
        if scope_id not in self._work.scopes:
            return
        last = self._last_seen.get(scope_id)
        enabled = self.config.enablement == "always" or (
            last is not None and at - last < self._idle_window
        )
        if last is None or at > last:
            self._last_seen[scope_id] = at
        persisted = self._work.scopes[scope_id].last_request_at
        if persisted is not None and at <= persisted:
            return
        if enabled and persisted is not None and at - persisted < self._persist_every:
            return
        tx = _Tx(self.clock.now())
        tx.scopes[scope_id] = msgspec.structs.replace(
            self._work.scopes[scope_id], last_request_at=at
        )
        if not enabled:
            tx.log("scope.enabled", scope_id=scope_id, detail={"vm": vm_name})
        self._commit(tx, bookkeeping=True)

    # ----------------------------------------------------------------- internals

    def _operation_kind(self, operation_id: str) -> str | None:
        op = self._work.operations.get(operation_id)
        return None if op is None else op.kind

    def _terminate_notice(self, vms: list[VM]) -> float:
        """A scale set's configured Terminate notice (the planner allows one set per request)."""
        minutes = max(
            self.topology.scopes[vm.scope_id].policy.terminate_timeout_minutes for vm in vms
        )
        return self.config.scaled(minutes * 60.0)

    def _min_notice(self, spec: OperationSpec, vms: list[VM]) -> float:
        if spec.needs_scale_set:
            return self._terminate_notice(vms)
        return self.config.scaled(spec.minimum_notice)

    def _default_notice(self, spec: OperationSpec, vms: list[VM]) -> float:
        if spec.created_started:
            return 0.0
        if spec.needs_scale_set:
            return self._terminate_notice(vms)
        return self.config.scaled(spec.notice)

    def _check_in_progress(self, plan: Plan, now: float) -> None:
        """Azure refuses a user operation on a VM while another one is in progress (409):
        scheduled, or started and its impact not over yet."""
        if not plan.spec.user_initiated:
            return
        for name in plan.batches[0]:
            op_id = self._work.user_ops.get(name)
            op = self._work.active.get(op_id) if op_id is not None else None
            if op is None:
                continue
            if op.started_at is not None and now >= op.started_at + op.impact_seconds:
                continue
            events = ", ".join(op.event_ids) or "no event (no notice)"
            raise Conflict(
                f"VM {name!r} already has a {op.kind} in progress (operation {op.id}, "
                f"event {events}); wait until it is over"
            )

    def _check_preview_limit(self, plan: Plan) -> None:
        if not plan.spec.user_initiated:
            return
        limit = self.config.preview_user_operation_limit
        for scope_id in {self.topology.vms[n].scope_id for n in plan.batches[0]}:
            if not self.topology.scopes[scope_id].policy.preview_user_operation_limit:
                continue
            active = self._work.scope_user_operations(scope_id)
            if active >= limit:
                raise InvalidOperation(
                    f"scope {scope_id!r} already has {active} user-initiated operations in "
                    f"progress (preview limit {limit})"
                )

    def _create_operation(
        self,
        tx: _Tx,
        spec: OperationSpec,
        request: OperationRequest,
        vm_names: tuple[str, ...],
        rollout_id: str | None,
    ) -> OperationRecord:
        now = tx.at
        vms = [self.topology.vms[n] for n in vm_names if n not in self._work.deleted]
        notice = request.notice_seconds
        if notice is None:
            notice = self._default_notice(spec, vms)
        groups: dict[tuple[str, str, int], list[str]] = {}
        silent: list[str] = []
        for vm in vms:
            scope = self.topology.scopes[vm.scope_id]
            no_notice = not self.is_enabled(vm.scope_id, now) or (
                spec.needs_scale_set and not scope.policy.terminate_notification
            )
            if no_notice:
                silent.append(vm.name)
            else:
                groups.setdefault(group_key(vm), []).append(vm.name)
        auto = (
            spec.user_initiated
            and bool(groups)
            and all(
                self.topology.scopes[key[0]].policy.auto_approves(spec.event_type) for key in groups
            )
        )
        starts_now = spec.created_started or auto or not groups
        op = OperationRecord(
            id=f"op-{self._new_token()}",
            kind=spec.kind.value,
            target=request.target,
            vms=tuple(vm.name for vm in vms),
            state=OperationState.SCHEDULED,
            created_at=now,
            not_before=now + (0.0 if starts_now else notice),
            impact_seconds=self.config.scaled(spec.impact),
            hold_seconds=self.config.scaled(spec.hold),
            deletes_vms=spec.deletes_vm,
            rollout_id=rollout_id,
        )
        # DurationInSeconds is what the platform announces, not scaled: client policies
        # ("approve a Freeze under 9 s") must decide as they would in production.
        duration = (
            spec.wire_duration if request.duration_seconds is None else (request.duration_seconds)
        )
        events = []
        for (scope_id, _host, _ud), names in groups.items():
            event = EventRecord(
                id=self._new_id(),
                operation_id=op.id,
                scope_id=scope_id,
                event_type=spec.event_type,
                source=spec.source,
                status=EventStatus(next_event_phase(EventPhase.NEW, Step.CREATE).value),
                resources=tuple(names),
                description=spec.description
                if request.description is None
                else request.description,
                duration_seconds=duration,
                created_at=now,
                not_before=op.not_before,
            )
            tx.events[event.id] = event
            events.append(event)
        op = msgspec.structs.replace(
            op, event_ids=tuple(e.id for e in events), unnotified=tuple(silent)
        )
        tx.operations[op.id] = op
        tx.log(
            "operation.created",
            operation_id=op.id,
            detail={
                "kind": op.kind,
                "target": op.target,
                "vms": list(op.vms),
                "not_before": op.not_before,
                "no_notice": silent,
            },
        )
        for event in events:
            tx.log_event(
                "event.scheduled",
                event,
                type=event.event_type.value,
                resources=list(event.resources),
            )
        if starts_now:
            reason = "auto_approved" if auto else ("no_notice" if not groups else "immediate")
            self._start_operation(tx, op, reason=reason)
        return tx.operations[op.id]

    def _approve(self, event_ids: list[str], by: str) -> list[EventRecord]:
        now = self.clock.now()
        tx = _Tx(now)
        out = []
        for event_id in event_ids:
            event = self._work.events.get(event_id)
            if event is None:  # removed by a change still being written: nothing to do
                continue
            if event.status is EventStatus.SCHEDULED and event.approved_by is None:
                event = msgspec.structs.replace(event, approved_by=by, approved_at=now)
                tx.events[event.id] = event
                tx.log_event("event.approved", event, by=by)
            out.append(event)
        for op_id in dict.fromkeys(e.operation_id for e in out):
            self._start_if_approved(tx, self._work.operations[op_id])
        if tx.history:
            self._commit(tx)
        return out

    def _drop_event(self, tx: _Tx, event: EventRecord, kind: str) -> None:
        """Remove one event of an operation before its end: its VMs are spared."""
        self._remove_events(tx, [event], kind)
        op = tx.operations.get(event.operation_id) or self._work.operations[event.operation_id]
        spared = tuple(dict.fromkeys((*op.spared_vms, *event.resources)))
        op = msgspec.structs.replace(op, spared_vms=spared)
        tx.operations[op.id] = op
        self._settle_operation(tx, op)
        if tx.operations[op.id].state is OperationState.SCHEDULED:
            self._start_if_approved(tx, op)

    def _start_if_approved(self, tx: _Tx, op: OperationRecord) -> None:
        """Start a Scheduled operation once every event it still has is approved."""
        op = tx.operations.get(op.id, op)
        live = [e for e in (self._current(tx, eid) for eid in op.event_ids) if e is not None]
        if op.state is OperationState.SCHEDULED and live and all(e.approved_by for e in live):
            self._start_operation(tx, op, reason="approved")

    def _current(self, tx: _Tx, event_id: str) -> EventRecord | None:
        if event_id in tx.removed:
            return None
        return tx.events.get(event_id) or self._work.events.get(event_id)

    def _start_operation(self, tx: _Tx, op: OperationRecord, reason: str) -> None:
        op = tx.operations.get(op.id, op)
        state = next_operation_state(op.state.value, Step.START, f"operation {op.id}")
        op = msgspec.structs.replace(op, state=OperationState(state), started_at=tx.at)
        tx.operations[op.id] = op
        tx.log("operation.started", operation_id=op.id, detail={"reason": reason})
        for event_id in op.event_ids:
            event = self._current(tx, event_id)
            if event is None:
                continue
            phase = next_event_phase(
                EventPhase(event.status.value), Step.START, f"event {event.id}"
            )
            started = msgspec.structs.replace(
                event, status=EventStatus(phase.value), started_at=tx.at
            )
            tx.events[event.id] = started
            tx.log_event("event.started", event, reason=reason)

    def _finish_operation(self, tx: _Tx, op: OperationRecord) -> None:
        live = [e for e in (self._current(tx, eid) for eid in op.event_ids) if e is not None]
        self._remove_events(tx, live, "event.completed")
        self._settle_operation(tx, op)

    def _remove_events(self, tx: _Tx, events: list[EventRecord], kind: str) -> None:
        for event in events:
            step = Step.CANCEL if event.status is EventStatus.SCHEDULED else Step.REMOVE
            next_event_phase(EventPhase(event.status.value), step, f"event {event.id}")
            tx.events.pop(event.id, None)
            tx.removed[event.id] = event
            tx.log_event(kind, event)

    def _settle_operation(self, tx: _Tx, op: OperationRecord) -> None:
        """Close an operation once none of its events is left; then move its rollout on."""
        op = tx.operations.get(op.id, op)
        if any(self._current(tx, eid) is not None for eid in op.event_ids):
            return
        step = Step.FINISH if op.state is OperationState.STARTED else Step.CANCEL
        state = OperationState(next_operation_state(op.state.value, step, f"operation {op.id}"))
        tx.operations[op.id] = msgspec.structs.replace(op, state=state, ended_at=tx.at)
        tx.log(f"operation.{state.value}", operation_id=op.id)
        if state is OperationState.COMPLETED and op.deletes_vms:
            for name in op.vms:
                if name in op.spared_vms:
                    continue
                if name not in self._work.deleted and name not in tx.deleted_vms:
                    tx.deleted_vms.append(name)
                    tx.log(
                        "vm.deleted",
                        scope_id=self.topology.vms[name].scope_id,
                        operation_id=op.id,
                        detail={"vm": name},
                    )
        if op.rollout_id is not None:
            tx.finished_rollout_batches.append(op.rollout_id)

    def _advance_rollout(self, tx: _Tx, rollout_id: str) -> None:
        rollout = tx.rollouts.get(rollout_id) or self._work.rollouts[rollout_id]
        batches = rollout.batches
        index = rollout.next_batch
        while index < len(batches):
            names = tuple(
                n
                for n in batches[index]
                if n not in self._work.deleted and n not in tx.deleted_vms
            )
            index += 1
            if names:
                request = OperationRequest(
                    kind=rollout.kind, scope=rollout.scope_id, **rollout.options
                )
                op = self._create_operation(tx, spec_for(rollout.kind), request, names, rollout.id)
                tx.rollouts[rollout.id] = msgspec.structs.replace(
                    rollout, next_batch=index, current_operation=op.id
                )
                return
        tx.rollouts[rollout.id] = msgspec.structs.replace(
            rollout, next_batch=index, current_operation=None, done=True
        )
        tx.log("rollout.completed", scope_id=rollout.scope_id, detail={"id": rollout.id})

    def _forget_deleted_vms(self, tx: _Tx) -> None:
        """A deleted VM leaves every other event of its scope (an incarnation step); an
        event left with no VM is removed, and its operation no longer waits for it."""
        done = 0
        while done < len(tx.deleted_vms):
            name = tx.deleted_vms[done]
            done += 1
            scope_id = self.topology.vms[name].scope_id
            candidates = dict(self._work.by_scope[scope_id])
            candidates.update((k, e) for k, e in tx.events.items() if e.scope_id == scope_id)
            for event_id in candidates:
                event = self._current(tx, event_id)
                if event is None or name not in event.resources:
                    continue
                remaining = tuple(r for r in event.resources if r != name)
                if not remaining:
                    self._drop_event(tx, event, "event.canceled")
                    continue
                tx.events[event.id] = msgspec.structs.replace(event, resources=remaining)
                tx.log_event("event.resources_changed", event, removed=[name])

    def _commit(
        self, tx: _Tx, *, bookkeeping: bool = False, clock_position: float | None = None
    ) -> Commit | None:
        if self._relay is not None:
            raise StoreUnavailable(
                "this process follows the fleet's leader and changes nothing itself; "
                "send the request to the leader (see forewarn status)"
            )
        self._forget_deleted_vms(tx)
        # Rollouts move on last, once every VM this transition deletes is known, so a new
        # batch never lists a VM that dies at the same instant.
        for rollout_id in dict.fromkeys(tx.finished_rollout_batches):
            self._advance_rollout(tx, rollout_id)
        changes = Changes(
            operations=list(tx.operations.values()),
            events=list(tx.events.values()),
            removed_events=list(tx.removed),
            rollouts=list(tx.rollouts.values()),
            scopes=list(tx.scopes.values()),
            deleted_vms=list(tx.deleted_vms),
            history=tx.history,
            clock_position=clock_position,
        )
        return self._pipe.commit(changes, bookkeeping=bookkeeping)


_IMPACT_STATUS = {
    "Freeze": "frozen",
    "Reboot": "rebooting",
    "Redeploy": "redeploying",
    "Preempt": "evicting",
    "Terminate": "terminating",
}


def _find_event(events: dict[str, EventRecord], event_id: str) -> EventRecord:
    """A live event by id, ignoring case."""
    found = events.get(event_id) or events.get(event_id.upper())
    if found is None:
        raise NotFoundError(f"no live event with id {event_id!r}")
    return found


def _request_options(request: OperationRequest) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if request.notice_seconds is not None:
        options["notice_seconds"] = request.notice_seconds
    if request.description is not None:
        options["description"] = request.description
    if request.duration_seconds is not None:
        options["duration_seconds"] = request.duration_seconds
    return options
