"""The platform's records in memory, with the indexes that keep every transition cheap.

The engine keeps two of these: the *working* state, which every new transition is built
on (it already holds changes that are still being written), and the *published* state,
which holds only what is durable and is all that readers ever see. Both move forward
by ``apply``; a failed write puts the working state back with ``restore``.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator

from forewarn.contract import RenderableEvent
from forewarn.fabric.records import (
    Changes,
    EventRecord,
    OperationRecord,
    OperationState,
    RolloutRecord,
    ScopeState,
)
from forewarn.fleet.topology import ScopePolicy, Topology

__all__ = ["FabricState", "TimerHeap"]

_ACTIVE = (OperationState.SCHEDULED, OperationState.STARTED)


class FabricState:
    """Operations, events, rollouts, scope counters and deleted VMs, indexed.

    ``by_scope`` keeps each scope's events in creation order (so a document renders in
    time proportional to its own events), ``active`` the operations still under way, and
    ``user_ops`` the live user-initiated operation of each VM (Azure runs one at a time).
    """

    __slots__ = (
        "active",
        "by_scope",
        "deleted",
        "events",
        "operations",
        "rollouts",
        "scope_user_ops",
        "scopes",
        "topology",
        "user_kinds",
        "user_ops",
    )

    def __init__(self, topology: Topology, user_kinds: frozenset[str]) -> None:
        self.topology = topology
        self.user_kinds = user_kinds
        self.operations: dict[str, OperationRecord] = {}
        self.active: dict[str, OperationRecord] = {}
        self.user_ops: dict[str, str] = {}
        self.scope_user_ops: dict[str, set[str]] = {sid: set() for sid in topology.scopes}
        self.events: dict[str, EventRecord] = {}
        self.by_scope: dict[str, dict[str, EventRecord]] = {sid: {} for sid in topology.scopes}
        self.rollouts: dict[str, RolloutRecord] = {}
        self.scopes: dict[str, ScopeState] = {
            sid: ScopeState(scope_id=sid) for sid in topology.scopes
        }
        self.deleted: set[str] = set()

    # ------------------------------------------------------------------ writes

    def apply(self, changes: Changes) -> None:
        """Move forward by one committed (or about to be committed) change."""
        if changes.reset:
            self._clear()
        for op in changes.operations:
            self._put_operation(op)
        for event in changes.events:
            self._put_event(event)
        for event_id in changes.removed_events:
            self._drop_event(event_id)
        for rollout in changes.rollouts:
            self.rollouts[rollout.id] = rollout
        for scope in changes.scopes:
            if scope.scope_id in self.scopes:
                self.scopes[scope.scope_id] = scope
        self.deleted.update(changes.deleted_vms)

    def restore(self, source: FabricState, changes: Iterable[Changes]) -> None:
        """Put every record that ``changes`` touched back to its value in ``source``."""
        changes = list(changes)
        if any(change.reset for change in changes):  # it touched everything
            self._clear()
            self.apply(source.as_changes())
            return
        for change in changes:
            for op in change.operations:
                old_op = source.operations.get(op.id)
                if old_op is None:
                    self._forget_operation(op.id)
                else:
                    self._put_operation(old_op)
            for event_id in [e.id for e in change.events] + list(change.removed_events):
                old_event = source.events.get(event_id)
                if old_event is None:
                    self._drop_event(event_id)
                else:
                    self._put_event(old_event)
            for rollout in change.rollouts:
                old_rollout = source.rollouts.get(rollout.id)
                if old_rollout is None:
                    self.rollouts.pop(rollout.id, None)
                else:
                    self.rollouts[rollout.id] = old_rollout
            for scope in change.scopes:
                if scope.scope_id in source.scopes:
                    self.scopes[scope.scope_id] = source.scopes[scope.scope_id]
            for name in change.deleted_vms:
                if name not in source.deleted:
                    self.deleted.discard(name)

    def _clear(self) -> None:
        """Forget every operation, event, rollout and deleted VM (scope counters stay)."""
        self.operations.clear()
        self.active.clear()
        self.user_ops.clear()
        for ops in self.scope_user_ops.values():
            ops.clear()
        self.events.clear()
        for events in self.by_scope.values():
            events.clear()
        self.rollouts.clear()
        self.deleted.clear()

    def as_changes(self) -> Changes:
        """This whole state as one change (``restore`` after a failed reset)."""
        return Changes(
            operations=list(self.operations.values()),
            events=list(self.events.values()),
            rollouts=list(self.rollouts.values()),
            scopes=list(self.scopes.values()),
            deleted_vms=list(self.deleted),
        )

    def _put_operation(self, op: OperationRecord) -> None:
        self.operations[op.id] = op
        if op.state in _ACTIVE:
            self.active[op.id] = op
            if op.kind in self.user_kinds:
                for name in op.vms:
                    self.user_ops[name] = op.id
                    self.scope_user_ops[self.topology.vms[name].scope_id].add(op.id)
        else:
            self._forget_active(op.id)

    def _forget_operation(self, op_id: str) -> None:
        self._forget_active(op_id)
        self.operations.pop(op_id, None)

    def _forget_active(self, op_id: str) -> None:
        old = self.active.pop(op_id, None)
        if old is not None and old.kind in self.user_kinds:
            for name in old.vms:
                if self.user_ops.get(name) == op_id:
                    del self.user_ops[name]
                self.scope_user_ops[self.topology.vms[name].scope_id].discard(op_id)

    def _put_event(self, event: EventRecord) -> None:
        self.events[event.id] = event
        self.by_scope[event.scope_id][event.id] = event

    def _drop_event(self, event_id: str) -> None:
        event = self.events.pop(event_id, None)
        if event is not None:
            self.by_scope[event.scope_id].pop(event_id, None)

    # ------------------------------------------------------------------- reads

    def policy(self, scope_id: str) -> ScopePolicy:
        """A scope's policy: as last changed at run time, else the fleet file's."""
        return self.scopes[scope_id].policy or self.topology.scopes[scope_id].policy

    def rendered(self, scope_id: str) -> tuple[RenderableEvent, ...]:
        """A scope's events as the wire shows them, in creation order."""
        return tuple(e.renderable() for e in self.by_scope[scope_id].values())

    def scope_user_operations(self, scope_id: str) -> int:
        """How many live user-initiated operations touch a scope (the preview limit)."""
        return len(self.scope_user_ops[scope_id])

    def started(self) -> Iterator[OperationRecord]:
        """Operations whose impact may be under way."""
        return (op for op in self.active.values() if op.state is OperationState.STARTED)


class TimerHeap:
    """When each live operation next needs the scheduler, as a heap with lazy deletion.

    An entry is stale once its operation's due time or state changed; stale entries are
    dropped when they reach the top, so every transition costs what it touches.
    """

    __slots__ = ("_counter", "_heap")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, str, OperationState]] = []
        self._counter = itertools.count()

    def track(self, op: OperationRecord) -> None:
        """Note an operation's (new) due time, if it has one."""
        due = due_at(op)
        if due is not None:
            heapq.heappush(self._heap, (due, next(self._counter), op.id, op.state))

    def next_due(self, active: dict[str, OperationRecord]) -> float | None:
        """The earliest live due time, dropping stale entries on the way."""
        heap = self._heap
        while heap:
            due, _, op_id, state = heap[0]
            op = active.get(op_id)
            if op is not None and op.state is state and due_at(op) == due:
                return due
            heapq.heappop(heap)
        return None

    def any_due(self, now: float, active: dict[str, OperationRecord]) -> bool:
        """Whether a live operation is due at ``now``; one comparison while the earliest
        entry, live or stale, is later (every request asks)."""
        heap = self._heap
        if not heap or heap[0][0] > now:
            return False
        due = self.next_due(active)
        return due is not None and now >= due

    def pop_due(self, at: float, active: dict[str, OperationRecord]) -> list[OperationRecord]:
        """Every live operation due exactly at ``at`` (the current top), removed."""
        out: dict[str, OperationRecord] = {}
        heap = self._heap
        while heap and heap[0][0] <= at:
            due, _, op_id, state = heapq.heappop(heap)
            op = active.get(op_id)
            if op is not None and op.state is state and due_at(op) == due:
                out[op_id] = op
        return list(out.values())

    def __len__(self) -> int:
        return len(self._heap)


def due_at(op: OperationRecord) -> float | None:
    """When an operation next changes by itself: at NotBefore, or when its hold ends."""
    if op.state is OperationState.SCHEDULED:
        return op.not_before
    if op.state is OperationState.STARTED:
        return op.remove_at
    return None
