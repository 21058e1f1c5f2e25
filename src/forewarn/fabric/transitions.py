"""How one change is built: the lifecycle rules behind every transition.

A transition collects the records it changes in a ``Tx``; the rules here create
operations and their per-scope events, approve, start, remove and cancel them, settle
operations and move rollouts on, and let deleted VMs leave the events they were in.
``_commit`` hands the finished ``Tx`` to the pipeline. Everything here reads and builds on
the *working* state; the ``Fabric`` (``engine.py``) is the public face that calls it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from forewarn.contract import EventStatus
from forewarn.fabric.catalogue import OperationSpec, spec_for
from forewarn.fabric.clock import Clock
from forewarn.fabric.errors import Conflict, InvalidOperation, NotFoundError, StoreUnavailable
from forewarn.fabric.journal import Commit
from forewarn.fabric.lifecycle import EventPhase, Step, next_event_phase, next_operation_state
from forewarn.fabric.pipeline import Pipeline
from forewarn.fabric.planner import OperationRequest, Plan, group_key
from forewarn.fabric.records import (
    Changes,
    EventRecord,
    HistoryEntry,
    OperationRecord,
    OperationState,
    RolloutRecord,
    ScopeState,
)
from forewarn.fabric.relay import Relay
from forewarn.fabric.state import FabricState
from forewarn.fleet.topology import VM, Topology

if TYPE_CHECKING:
    from forewarn.fabric.engine import FabricConfig

__all__ = [
    "TransitionRules",
    "Tx",
    "find_event",
    "new_event_id",
    "new_token",
    "request_options",
]


@dataclass
class Tx:
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


def new_event_id() -> str:
    return str(uuid.uuid4()).upper()


def new_token() -> str:
    return uuid.uuid4().hex[:12]


class TransitionRules:
    """The lifecycle rules, building transitions on the working state (a base of
    ``Fabric``, which provides the attributes below)."""

    topology: Topology
    config: FabricConfig
    clock: Clock
    _work: FabricState
    _pipe: Pipeline
    _relay: Relay | None
    _new_id: Callable[[], str]
    _new_token: Callable[[], str]
    _last_seen: dict[str, float]
    _idle_window: float

    def is_enabled(self, scope_id: str, now: float | None = None) -> bool:
        """Whether Scheduled Events are on for a scope (first request seen, not idle)."""
        if self.config.enablement == "always":
            return True
        last = self._last_seen.get(scope_id)
        if last is None:
            return False
        now = self.clock.now() if now is None else now
        return now - last < self._idle_window


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
        tx: Tx,
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
                **({} if request.via == "control" else {"via": request.via}),
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

    def _approve(self, event_ids: list[str], by: str, via: str = "control") -> list[EventRecord]:
        now = self.clock.now()
        tx = Tx(now)
        out = []
        for event_id in event_ids:
            event = self._work.events.get(event_id)
            if event is None:  # removed by a change still being written: nothing to do
                continue
            if event.status is EventStatus.SCHEDULED and event.approved_by is None:
                event = msgspec.structs.replace(event, approved_by=by, approved_at=now)
                tx.events[event.id] = event
                extra = {} if via in ("control", "endpoint") else {"via": via}  # by tells those
                tx.log_event("event.approved", event, by=by, **extra)
            out.append(event)
        for op_id in dict.fromkeys(e.operation_id for e in out):
            self._start_if_approved(tx, self._work.operations[op_id])
        if tx.history:
            self._commit(tx)
        return out

    def _drop_event(self, tx: Tx, event: EventRecord, kind: str) -> None:
        """Remove one event of an operation before its end: its VMs are spared."""
        self._remove_events(tx, [event], kind)
        op = tx.operations.get(event.operation_id) or self._work.operations[event.operation_id]
        spared = tuple(dict.fromkeys((*op.spared_vms, *event.resources)))
        op = msgspec.structs.replace(op, spared_vms=spared)
        tx.operations[op.id] = op
        self._settle_operation(tx, op)
        if tx.operations[op.id].state is OperationState.SCHEDULED:
            self._start_if_approved(tx, op)

    def _start_if_approved(self, tx: Tx, op: OperationRecord) -> None:
        """Start a Scheduled operation once every event it still has is approved."""
        op = tx.operations.get(op.id, op)
        live = [e for e in (self._current(tx, eid) for eid in op.event_ids) if e is not None]
        if op.state is OperationState.SCHEDULED and live and all(e.approved_by for e in live):
            self._start_operation(tx, op, reason="approved")

    def _current(self, tx: Tx, event_id: str) -> EventRecord | None:
        if event_id in tx.removed:
            return None
        return tx.events.get(event_id) or self._work.events.get(event_id)

    def _start_operation(self, tx: Tx, op: OperationRecord, reason: str) -> None:
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

    def _finish_operation(self, tx: Tx, op: OperationRecord) -> None:
        live = [e for e in (self._current(tx, eid) for eid in op.event_ids) if e is not None]
        self._remove_events(tx, live, "event.completed")
        self._settle_operation(tx, op)

    def _remove_events(self, tx: Tx, events: list[EventRecord], kind: str) -> None:
        for event in events:
            step = Step.CANCEL if event.status is EventStatus.SCHEDULED else Step.REMOVE
            next_event_phase(EventPhase(event.status.value), step, f"event {event.id}")
            tx.events.pop(event.id, None)
            tx.removed[event.id] = event
            tx.log_event(kind, event)

    def _settle_operation(self, tx: Tx, op: OperationRecord) -> None:
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

    def _advance_rollout(self, tx: Tx, rollout_id: str) -> None:
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

    def _forget_deleted_vms(self, tx: Tx) -> None:
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
        self, tx: Tx, *, bookkeeping: bool = False, clock_position: float | None = None
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


def find_event(events: dict[str, EventRecord], event_id: str) -> EventRecord:
    """A live event by id, ignoring case."""
    found = events.get(event_id) or events.get(event_id.upper())
    if found is None:
        raise NotFoundError(f"no live event with id {event_id!r}")
    return found


def request_options(request: OperationRequest) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if request.notice_seconds is not None:
        options["notice_seconds"] = request.notice_seconds
    if request.description is not None:
        options["description"] = request.description
    if request.duration_seconds is not None:
        options["duration_seconds"] = request.duration_seconds
    return options
