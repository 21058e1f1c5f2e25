"""The lifecycle engine: operations become per-scope events that move through their life.

Every change goes through one path: build a ``_Tx`` of new records, let ``_commit``
work out which scope documents changed (and bump exactly those incarnations), write it
all to the store in one transaction, and only then swap it into memory. A crash at any
point leaves either the old state or the new one on disk, never half of each.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from ..contract import EventStatus, EventType, RenderableEvent
from .catalogue import OperationSpec, spec_for
from .clock import Clock
from .errors import EventNotVisible, InvalidOperation, NotFoundError
from .lifecycle import EventPhase, Step, next_event_phase, next_operation_state
from .planner import OperationRequest, Plan, group_key, plan_request
from .ports import Store
from .records import (
    Changes,
    EventRecord,
    HistoryEntry,
    OperationRecord,
    OperationState,
    RolloutRecord,
    ScopeState,
)
from .topology import VM, Scope, Topology

__all__ = ["Fabric", "FabricConfig", "ScopeView"]

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


@dataclass(frozen=True, slots=True)
class ScopeView:
    """What a scope's VMs see: its incarnation and its events in creation order."""

    scope: Scope
    incarnation: int
    events: tuple[RenderableEvent, ...]

    def events_for(self, vm_name: str) -> tuple[RenderableEvent, ...]:
        """The events ``vm_name`` sees (all of them, except in per-VM-visibility scopes)."""
        if not self.scope.policy.per_vm_visibility:
            return self.events
        return tuple(e for e in self.events if vm_name in e.resources)


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
        new_id: Callable[[], str] = _new_event_id,
        new_token: Callable[[], str] = _new_token,
    ) -> None:
        """``new_id`` makes event ids, ``new_token`` operation and rollout ids (tests
        pass deterministic ones)."""
        self.topology = topology
        self.clock = clock
        self.config = config or FabricConfig()
        self._store = store
        self._new_id = new_id
        self._new_token = new_token
        self._listeners: list[Callable[[], None]] = []
        self._history_listeners: list[Callable[[list[HistoryEntry]], None]] = []
        snapshot = store.load()
        self._operations: dict[str, OperationRecord] = {o.id: o for o in snapshot.operations}
        self._events: dict[str, EventRecord] = {e.id: e for e in snapshot.events}
        self._rollouts: dict[str, RolloutRecord] = {r.id: r for r in snapshot.rollouts}
        self._deleted: set[str] = set(snapshot.deleted_vms)
        self._scope_states: dict[str, ScopeState] = {
            sid: ScopeState(scope_id=sid) for sid in topology.scopes
        }
        for state in snapshot.scopes:
            if state.scope_id in self._scope_states:
                self._scope_states[state.scope_id] = state
        self._last_seen: dict[str, float] = {
            sid: s.last_request_at
            for sid, s in self._scope_states.items()
            if s.last_request_at is not None
        }
        self._idle_window = self.config.scaled(self.config.idle_disable_seconds)
        self._persist_every = self.config.last_request_persist_seconds
        self._views: dict[str, ScopeView] = {}
        for scope_id in topology.scopes:
            self._refresh_view(scope_id)
        self._pending: dict[str, OperationRecord] = {}
        self._next_due: float | None = None
        self._track_pending(self._operations.values())

    # ----------------------------------------------------------------- reading

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after every committed change (the scheduler wakes on it)."""
        self._listeners.append(listener)

    def on_history(self, listener: Callable[[list[HistoryEntry]], None]) -> None:
        """Call ``listener`` with the history entries of every committed change (logging)."""
        self._history_listeners.append(listener)

    def view(self, scope_id: str) -> ScopeView:
        """The current document of a scope (late timers fired first)."""
        self.catch_up()
        try:
            return self._views[scope_id]
        except KeyError:
            raise NotFoundError(f"no scope named {scope_id!r}") from None

    def events(self) -> list[EventRecord]:
        """Every live (visible) event, in creation order (late timers fired first)."""
        self.catch_up()
        return list(self._events.values())

    def event(self, event_id: str) -> EventRecord:
        """A live event by id (case-insensitive)."""
        found = self._events.get(event_id) or self._events.get(event_id.upper())
        if found is None:
            raise NotFoundError(f"no live event with id {event_id!r}")
        return found

    def operations(self) -> list[OperationRecord]:
        """Every operation this database has seen, oldest first."""
        return list(self._operations.values())

    def operation(self, operation_id: str) -> OperationRecord:
        """An operation by id."""
        try:
            return self._operations[operation_id]
        except KeyError:
            raise NotFoundError(f"no operation with id {operation_id!r}") from None

    def rollouts(self) -> list[RolloutRecord]:
        """Every rollout (update-domain walk)."""
        return list(self._rollouts.values())

    def is_deleted(self, vm_name: str) -> bool:
        """True once a Preempt or Terminate has removed the VM."""
        return vm_name in self._deleted

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
        if vm_name in self._deleted:
            return "deleted"
        now = self.clock.now()
        for op in self._pending.values():
            if (
                op.state is OperationState.STARTED
                and op.started_at is not None
                and now < op.started_at + op.impact_seconds
                and vm_name in op.vms
                and vm_name not in op.spared_vms
            ):
                return _IMPACT_STATUS.get(spec_for(op.kind).event_type.value, "impacted")
        return "running"

    def history(self, **filters: Any) -> list[HistoryEntry]:
        """The append-only history (see ``Store.history`` for filters)."""
        return self._store.history(**filters)

    def next_due(self) -> float | None:
        """The earliest instant at which a timer fires, or None when nothing is pending."""
        return self._next_due

    def catch_up(self) -> None:
        """Fire due timers now if any is late (cheap when none is): readers never see a
        Scheduled event past its NotBefore just because the scheduler has not woken yet."""
        if self._next_due is not None and self.clock.now() >= self._next_due:
            self.run_due()

    # ------------------------------------------------------------- the endpoint

    def note_request(self, vm: VM) -> bool:
        """Record that a VM asked for its document; True when this enabled its scope.

        The common case (scope enabled, last request persisted recently) writes nothing."""
        now = self.clock.now()
        scope_id = vm.scope_id
        last = self._last_seen.get(scope_id)
        recent = last is not None and now - last < self._idle_window
        persisted = self._scope_states[scope_id].last_request_at
        if recent and persisted is not None and now - persisted < self._persist_every:
            self._last_seen[scope_id] = now
            return False
        was_enabled = recent or self.config.enablement == "always"
        tx = _Tx(now)
        tx.scopes[scope_id] = msgspec.structs.replace(
            self._scope_states[scope_id], last_request_at=now
        )
        if not was_enabled:
            tx.log("scope.enabled", scope_id=scope_id, detail={"vm": vm.name})
        self._commit(tx)
        self._last_seen[scope_id] = now  # only once it is on disk
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
        view = self._views[vm.scope_id]
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
        return self._approve(wanted, by=vm.name)

    # ----------------------------------------------------------- control plane

    def submit(self, request: OperationRequest) -> OperationRecord:
        """Carry out an operation request; returns its (first) operation."""
        self.catch_up()  # timers that are due fire first
        now = self.clock.now()
        plan = plan_request(request, self.topology, self.is_deleted, self._min_notice)
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
        return self._operations[op.id]

    def approve_event(self, event_id: str, by: str = "control") -> EventRecord:
        """Approve one event from the control plane."""
        self.catch_up()  # timers that are due fire first
        event = self.event(event_id)
        self._approve([event.id], by=by)
        return self._events.get(event.id, event)

    def start_event(self, event_id: str) -> OperationRecord:
        """Start an event's operation now, without waiting for approvals or NotBefore."""
        self.catch_up()  # timers that are due fire first
        event = self.event(event_id)
        next_event_phase(EventPhase(event.status.value), Step.START, f"event {event.id}")
        tx = _Tx(self.clock.now())
        self._start_operation(tx, self._operations[event.operation_id], reason="forced")
        self._commit(tx)
        return self._operations[event.operation_id]

    def cancel_event(self, event_id: str) -> EventRecord:
        """Cancel a Scheduled event: it disappears with no impact on its VMs."""
        self.catch_up()  # timers that are due fire first
        event = self.event(event_id)
        next_event_phase(EventPhase(event.status.value), Step.CANCEL, f"event {event.id}")
        tx = _Tx(self.clock.now())
        self._remove_events(tx, [event], "event.canceled")
        op = self._operations[event.operation_id]
        tx.operations[op.id] = msgspec.structs.replace(
            op, spared_vms=(*op.spared_vms, *event.resources)
        )
        self._settle_operation(tx, op)
        self._start_if_approved(tx, op)
        self._commit(tx)
        return event

    def complete_event(self, event_id: str) -> EventRecord:
        """End a Started event now (its impact is over); it disappears."""
        self.catch_up()  # timers that are due fire first
        event = self.event(event_id)
        next_event_phase(EventPhase(event.status.value), Step.REMOVE, f"event {event.id}")
        tx = _Tx(self.clock.now())
        self._remove_events(tx, [event], "event.completed")
        self._settle_operation(tx, self._operations[event.operation_id])
        self._commit(tx)
        return event

    def advance(self, seconds: float) -> float:
        """Move a virtual clock forward and run every timer that came due, in order.

        The new position is saved first, so a restart never moves virtual time back."""
        self.clock.check_jump(seconds)
        self._store.save_clock_position(self.clock.now() + seconds)
        self.clock.jump(seconds)
        self.run_due()
        return self.clock.now()

    def run_due(self) -> int:
        """Fire every timer due by now, in order; timers due at the same instant fire in one
        transition (one incarnation step). Returns how many timers fired."""
        fired = 0
        now = self.clock.now()
        while self._next_due is not None and self._next_due <= now:
            at = self._next_due
            tx = _Tx(at)
            for op in [op for op in self._pending.values() if self._due_at(op) == at]:
                op = tx.operations.get(op.id, op)
                if op.state is OperationState.SCHEDULED:
                    self._start_operation(tx, op, reason="not_before")
                elif op.state is OperationState.STARTED:
                    self._finish_operation(tx, op)
                fired += 1
            self._commit(tx)
        return fired

    # ----------------------------------------------------------------- internals

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

    def _check_preview_limit(self, plan: Plan) -> None:
        if not plan.spec.user_initiated:
            return
        limit = self.config.preview_user_operation_limit
        for scope_id in {self.topology.vms[n].scope_id for n in plan.batches[0]}:
            if not self.topology.scopes[scope_id].policy.preview_user_operation_limit:
                continue
            active = sum(
                1
                for op in self._pending.values()
                if spec_for(op.kind).user_initiated
                and any(self.topology.vms[n].scope_id == scope_id for n in op.vms)
            )
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
        vms = [self.topology.vms[n] for n in vm_names if n not in self._deleted]
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
            event = self._events[event_id]
            if event.status is EventStatus.SCHEDULED and event.approved_by is None:
                event = msgspec.structs.replace(event, approved_by=by, approved_at=now)
                tx.events[event.id] = event
                tx.log_event("event.approved", event, by=by)
            out.append(event)
        for op_id in dict.fromkeys(e.operation_id for e in out):
            self._start_if_approved(tx, self._operations[op_id])
        if tx.history:
            self._commit(tx)
        return out

    def _start_if_approved(self, tx: _Tx, op: OperationRecord) -> None:
        """Start a Scheduled operation once every event it still has is approved."""
        op = tx.operations.get(op.id, op)
        live = [e for e in (self._current(tx, eid) for eid in op.event_ids) if e is not None]
        if op.state is OperationState.SCHEDULED and live and all(e.approved_by for e in live):
            self._start_operation(tx, op, reason="approved")

    def _current(self, tx: _Tx, event_id: str) -> EventRecord | None:
        if event_id in tx.removed:
            return None
        return tx.events.get(event_id) or self._events.get(event_id)

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
                if name not in self._deleted and name not in tx.deleted_vms:
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
        rollout = tx.rollouts.get(rollout_id) or self._rollouts[rollout_id]
        batches = rollout.batches
        index = rollout.next_batch
        while index < len(batches):
            names = tuple(
                n for n in batches[index] if n not in self._deleted and n not in tx.deleted_vms
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

    def _due_at(self, op: OperationRecord) -> float | None:
        if op.state is OperationState.SCHEDULED:
            return op.not_before
        if op.state is OperationState.STARTED:
            return op.remove_at
        return None

    def _commit(self, tx: _Tx) -> None:
        # Rollouts move on last, once every VM this transition deletes is known, so a new
        # batch never lists a VM that dies at the same instant.
        for rollout_id in dict.fromkeys(tx.finished_rollout_batches):
            self._advance_rollout(tx, rollout_id)
        touched = {e.scope_id for e in tx.events.values()} | {
            e.scope_id for e in tx.removed.values()
        }
        new_states = dict(tx.scopes)
        for scope_id in touched:
            before = self._views[scope_id].events
            after = self._render_scope(scope_id, tx)
            if before != after:
                base = new_states.get(scope_id, self._scope_states[scope_id])
                new_states[scope_id] = msgspec.structs.replace(
                    base, incarnation=self._scope_states[scope_id].incarnation + 1
                )
        changes = Changes(
            operations=list(tx.operations.values()),
            events=list(tx.events.values()),
            removed_events=list(tx.removed),
            rollouts=list(tx.rollouts.values()),
            scopes=list(new_states.values()),
            deleted_vms=list(tx.deleted_vms),
            history=tx.history,
        )
        if changes.empty():
            return
        self._store.apply(changes)
        self._operations.update(tx.operations)
        self._track_pending(tx.operations.values())
        self._events.update(tx.events)
        for event_id in tx.removed:
            self._events.pop(event_id, None)
        self._rollouts.update(tx.rollouts)
        self._scope_states.update(new_states)
        self._deleted.update(tx.deleted_vms)
        for scope_id in touched | set(new_states):
            self._refresh_view(scope_id)
        for listener in list(self._listeners):
            listener()
        if tx.history:
            for history_listener in list(self._history_listeners):
                history_listener(tx.history)

    def _track_pending(self, operations: Iterable[OperationRecord]) -> None:
        for op in operations:
            if self._due_at(op) is None:
                self._pending.pop(op.id, None)
            else:
                self._pending[op.id] = op
        due = [t for t in (self._due_at(op) for op in self._pending.values()) if t is not None]
        self._next_due = min(due) if due else None

    def _render_scope(self, scope_id: str, tx: _Tx | None = None) -> tuple[RenderableEvent, ...]:
        events: dict[str, EventRecord] = {
            k: v for k, v in self._events.items() if v.scope_id == scope_id
        }
        if tx is not None:
            for event in tx.events.values():
                if event.scope_id == scope_id:
                    events[event.id] = event
            for event_id in tx.removed:
                events.pop(event_id, None)
        return tuple(e.renderable() for e in events.values())

    def _refresh_view(self, scope_id: str) -> None:
        self._views[scope_id] = ScopeView(
            scope=self.topology.scopes[scope_id],
            incarnation=self._scope_states[scope_id].incarnation,
            events=self._render_scope(scope_id),
        )


_IMPACT_STATUS = {
    "Freeze": "frozen",
    "Reboot": "rebooting",
    "Redeploy": "redeploying",
    "Preempt": "evicting",
    "Terminate": "terminating",
}


def _request_options(request: OperationRequest) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if request.notice_seconds is not None:
        options["notice_seconds"] = request.notice_seconds
    if request.description is not None:
        options["description"] = request.description
    if request.duration_seconds is not None:
        options["duration_seconds"] = request.duration_seconds
    return options
