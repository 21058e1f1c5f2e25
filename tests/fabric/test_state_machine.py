"""Random sequences of platform work, approvals and time against the lifecycle invariants.

Every transition is observed where it is written (a store that reports each ``apply``),
and checked against the one before: "the incarnation moves by exactly one on a visible
change" holds per transition, not just per step. After every step the fabric's views must
match what the transitions said.
"""

from __future__ import annotations

import itertools
import math
import shutil
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from forewarn.contract import EventStatus, RenderableEvent
from forewarn.fabric import (
    CATALOGUE,
    Changes,
    Clock,
    EventNotVisible,
    EventRecord,
    Fabric,
    FabricError,
    OperationKind,
    OperationRecord,
    OperationRequest,
    OperationState,
)
from forewarn.fleet import Topology, UnknownName, build_topology, demo_fleet
from forewarn.store import SQLiteStore
from tests.support.fabrics import DAY, DEMO_LAYOUT, T0, observable

TOPOLOGY: Topology = build_topology(demo_fleet())
VMS = sorted(TOPOLOGY.vms)
HOSTS = [*sorted(TOPOLOGY.hosts()), "host-9"]
SCOPES = [*TOPOLOGY.scopes, "nowhere"]
KINDS = [k.value for k in OperationKind] + ["bogus"]
GHOST = "5DD55B64-45AD-49D3-BBC9-6E8B5A3E0B4F"

vm_names = st.sampled_from(VMS)
one_vm = vm_names.map(lambda v: {"vms": (v,)})
some_vms = st.lists(vm_names, min_size=1, max_size=3).map(lambda v: {"vms": tuple(v)})
anywhere = st.one_of(
    some_vms,
    st.sampled_from(HOSTS).map(lambda h: {"host": h}),
    st.sampled_from(SCOPES).map(lambda s: {"scope": s}),
)
workers = st.lists(st.sampled_from(TOPOLOGY.scopes["workers"].vm_names), min_size=1, max_size=3)
notices = st.one_of(st.none(), st.none(), st.sampled_from([30.0, 300.0, 900.0, DAY, 3 * DAY]))
#: Mostly plausible requests (so that events exist), some of anything at all.
requests = st.one_of(
    st.tuples(st.sampled_from(["user-reboot", "user-redeploy"]), one_vm),
    st.tuples(
        st.sampled_from(
            [
                "live-migration",
                "host-update",
                "platform-reboot",
                "platform-redeploy",
                "degraded-hardware",
                "hardware-failure",
            ]
        ),
        anywhere,
    ),
    st.tuples(
        st.sampled_from(["spot-eviction", "scale-in"]),
        workers.map(lambda v: {"vms": tuple(v)}),
    ),
    st.tuples(st.sampled_from(KINDS), anywhere),
)
seconds = st.one_of(
    st.integers(0, 2 * 3600), st.sampled_from([30, 60, 300, 600, 900]), st.floats(0, 2 * 3600)
)


class ObservedStore(SQLiteStore):
    """A SQLite store that reports every committed transition."""

    def __init__(self, path: str | Path, observer: Callable[[Changes], None]) -> None:
        super().__init__(path)
        self.observer = observer

    def apply(self, changes: Changes) -> None:
        super().apply(changes)
        self.observer(changes)


@dataclass
class Action:
    """What the current step asked for, to justify the transitions it causes."""

    forced_operation: str | None = None
    canceled: str | None = None
    completed: str | None = None
    approving: set[str] = field(default_factory=set)


def rendered(records: dict[str, EventRecord], scope_id: str) -> tuple[RenderableEvent, ...]:
    return tuple(e.renderable() for e in records.values() if e.scope_id == scope_id)


class FabricMachine(RuleBasedStateMachine):
    """Drives one fabric over the demo fleet; the subclass adds restarts on a file."""

    db: str | Path = ":memory:"

    def __init__(self) -> None:
        super().__init__()
        self.clock = Clock.virtual(start=T0)
        # The model, built only from the transitions the store saw.
        self.records: dict[str, EventRecord] = {}
        self.operations: dict[str, OperationRecord] = {}
        self.incarnations = dict.fromkeys(TOPOLOGY.scopes, 1)
        self.deleted: set[str] = set()
        self.seen: dict[str, tuple[str, str, tuple[str, ...]]] = {}
        self.removed: set[str] = set()
        self.started: set[str] = set()
        self.approved: set[str] = set()
        self.spared: dict[str, set[str]] = {}
        self.action = Action()
        self.commits = 0
        self.ids = itertools.count(1)
        self.fabric = self.open()

    # ------------------------------------------------------------------ plumbing

    def open(self) -> Fabric:
        self.store = ObservedStore(self.db, self.on_commit)
        return Fabric(TOPOLOGY, self.store, self.clock, new_id=self.new_id)

    def new_id(self) -> str:
        """Deterministic upper-case GUIDs, so that replayed examples draw the same ids."""
        return str(uuid.UUID(int=0xE0E0 << 64 | next(self.ids))).upper()

    def attempt(self, action: Action, call: Any, *args: Any) -> Any:
        """Run one fabric call; an expected FabricError must leave everything unchanged."""
        before = observable(self.fabric)
        commits = self.commits
        self.action = action
        try:
            return call(*args)
        except (FabricError, UnknownName) as exc:
            assert self.commits == commits, f"{exc!r} after a commit"
            assert observable(self.fabric) == before, f"{exc!r} changed state"
            return exc
        finally:
            self.action = Action()

    # ------------------------------------------------------------- per commit

    def on_commit(self, changes: Changes) -> None:
        self.commits += 1
        records = dict(self.records)
        for rec in changes.events:
            records[rec.id] = rec
        gone = [records.pop(i) for i in changes.removed_events if i in records]
        assert len(gone) == len(changes.removed_events), "removed an event that was not live"
        for op in changes.operations:
            self.operations[op.id] = op
        incarnations = dict(self.incarnations)
        for state in changes.scopes:
            incarnations[state.scope_id] = state.incarnation
        for sid, incarnation in incarnations.items():
            changed = rendered(records, sid) != rendered(self.records, sid)
            assert incarnation == self.incarnations[sid] + changed, (
                f"{sid}: incarnation {self.incarnations[sid]} -> {incarnation}, "
                f"document changed: {changed}"
            )
        deleted = self.deleted | set(changes.deleted_vms)
        for old in gone:
            self.check_removal(old, deleted)
        # A deleted VM leaves every live event at once, also events of this transition.
        for rec in records.values():
            self.check_event(rec, self.records.get(rec.id), deleted)
        for op in changes.operations:
            if op.target.startswith("host "):  # S4: a host holds one update domain of a scope
                scopes = [self.seen[e][0] for e in op.event_ids if e in self.seen]
                assert len(scopes) == len(set(scopes)), f"{op.id}: two events in one scope"
        for name in set(changes.deleted_vms):
            assert name not in self.deleted, f"{name} deleted twice"
            assert any(
                op.deletes_vms
                and op.state is OperationState.COMPLETED
                and name in op.vms
                and name not in self.spared.get(op.id, ())
                for op in changes.operations
            ), f"{name} deleted without a completed Preempt/Terminate that kept it"
        self.records, self.incarnations, self.deleted = records, incarnations, deleted

    def check_event(self, rec: EventRecord, old: EventRecord | None, deleted: set[str]) -> None:
        identity = (rec.scope_id, rec.event_type.value, rec.resources)
        assert rec.id not in self.removed, f"removed event {rec.id} came back"
        assert not set(rec.resources) & deleted, "a deleted VM in a live event"
        if old is None:
            assert rec.id not in self.seen
            assert not set(rec.resources) & deleted, "a deleted VM in a new event"
            layouts = {DEMO_LAYOUT[n] for n in rec.resources}
            assert {scope for scope, _, _ in layouts} == {rec.scope_id}
            assert len({host for _, host, _ in layouts}) == 1, "VMs of several hosts"
            assert len({ud for _, _, ud in layouts}) == 1, "VMs of several update domains"
            self.seen[rec.id] = identity
        scope, kind, first = self.seen[rec.id]
        assert (scope, kind) == identity[:2], "an event changed identity"
        left = set(first) - set(rec.resources)
        assert set(rec.resources) <= set(first) and left <= deleted, "Resources changed"
        if rec.status is EventStatus.SCHEDULED:
            assert rec.id not in self.started, "Started went back to Scheduled"
            return
        if rec.id in self.started:
            return
        self.started.add(rec.id)
        op = self.operations[rec.operation_id]
        if old is None:
            assert CATALOGUE[OperationKind(op.kind)].created_started, "created Started"
            return
        assert rec.started_at is not None
        approvals = self.approved | self.action.approving
        all_approved = all(eid in approvals for eid in op.event_ids if eid not in self.removed)
        assert (
            rec.not_before <= rec.started_at
            or self.action.forced_operation == rec.operation_id
            or all_approved
        ), f"{rec.id} started without approval, NotBefore or force"

    def check_removal(self, old: EventRecord, deleted: set[str]) -> None:
        self.removed.add(old.id)
        every_vm_deleted = set(old.resources) <= deleted
        if old.status is EventStatus.SCHEDULED:
            assert self.action.canceled == old.id or every_vm_deleted, "a Scheduled event vanished"
            self.spared.setdefault(old.operation_id, set()).update(old.resources)
            return
        if self.action.completed == old.id or every_vm_deleted:
            return
        op = self.operations[old.operation_id]
        assert old.started_at is not None
        assert old.started_at + op.hold_seconds <= self.clock.now(), "removed before its hold"

    # ----------------------------------------------------------------- rules

    @initialize(first=st.sets(vm_names))
    def first_requests(self, first: set[str]) -> None:
        for name in sorted(first):
            self.fabric.note_request(TOPOLOGY.vms[name])

    @rule(request=requests, notice=notices)
    def submit(self, request: tuple[str, dict[str, Any]], notice: float | None) -> None:
        kind, where = request
        call = OperationRequest(kind=kind, notice_seconds=notice, **where)
        self.attempt(Action(), self.fabric.submit, call)

    def some_ids(self, data: st.DataObject) -> list[str]:
        """Ids of live events mostly, then of gone ones, any case, and unknown ones."""
        pool = sorted(self.records) or sorted(self.seen) or [GHOST]
        known = st.sampled_from(pool)
        pick = st.one_of(known, known, known.map(str.lower), st.sampled_from([*self.seen, GHOST]))
        return data.draw(st.lists(pick, min_size=1, max_size=3))

    @rule(data=st.data(), same_scope=st.booleans())
    def approve(self, data: st.DataObject, same_scope: bool) -> None:
        """Approve from a VM of the first id's scope (mostly valid) or from anywhere."""
        ids = self.some_ids(data)
        first = self.records.get(ids[0].upper())
        name = data.draw(vm_names)
        if same_scope and first is not None:
            mine = [e for e in self.records.values() if e.scope_id == first.scope_id]
            name = data.draw(st.sampled_from(first.resources))
            ids = data.draw(st.lists(st.sampled_from([e.id for e in mine]), min_size=1))
        vm = TOPOLOGY.vms[name]
        visible = {e.event_id for e in self.fabric.view(vm.scope_id).events_for(name)}
        valid = all(i.upper() in visible for i in ids)
        action = Action(approving={i.upper() for i in ids})
        result = self.attempt(action, self.fabric.approve, vm, ids)
        if valid:
            assert not isinstance(result, Exception), result
            self.approved |= {i.upper() for i in ids}
        else:
            assert isinstance(result, EventNotVisible), result

    @rule(data=st.data(), how=st.sampled_from(["cancel", "complete", "start"]))
    def control(self, data: st.DataObject, how: str) -> None:
        event_id = self.some_ids(data)[0]
        live = self.records.get(event_id.upper())
        action = Action(
            canceled=event_id.upper() if how == "cancel" else None,
            completed=event_id.upper() if how == "complete" else None,
            forced_operation=live.operation_id if how == "start" and live else None,
        )
        call = {
            "cancel": self.fabric.cancel_event,
            "complete": self.fabric.complete_event,
            "start": self.fabric.start_event,
        }[how]
        self.attempt(action, call, event_id)

    @rule(name=vm_names)
    def note_request(self, name: str) -> None:
        self.attempt(Action(), self.fabric.note_request, TOPOLOGY.vms[name])

    @rule(dt=seconds)
    def advance(self, dt: float) -> None:
        """Advance to each due instant in turn, so every timer fires at its own time."""
        target = self.clock.now() + dt
        for _ in range(10_000):
            due = self.fabric.next_due()
            if due is None or due > target:
                break
            now = self.clock.now()
            step = max(0.0, due - now)
            while now + step < due:
                step = math.nextafter(step, math.inf)
            self.fabric.advance(step)
        else:
            raise AssertionError("timers never settle")
        self.fabric.advance(max(0.0, target - self.clock.now()))

    # ------------------------------------------------------------ invariants

    @invariant()
    def views_match_the_transitions(self) -> None:
        assert [e.id for e in self.fabric.events()] == list(self.records)
        assert self.fabric.events() == list(self.records.values())
        for sid, scope in TOPOLOGY.scopes.items():
            view = self.fabric.view(sid)
            mine = rendered(self.records, sid)
            assert (view.incarnation, view.events) == (self.incarnations[sid], mine)
            assert set().union(*(e.resources for e in mine)) <= set(scope.vm_names)
            for name in scope.vm_names:
                expected = tuple(
                    e for e in mine if not scope.policy.per_vm_visibility or name in e.resources
                )
                assert view.events_for(name) == expected
        assert {n for n in VMS if self.fabric.is_deleted(n)} == self.deleted

    @invariant()
    def timers_are_never_overdue(self) -> None:
        due = self.fabric.next_due()
        assert due is None or due > self.clock.now()


FabricMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
TestFabricMachine = FabricMachine.TestCase


class RestartingMachine(FabricMachine):
    """The same on a SQLite file, with restarts that must not change anything visible."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="forewarn-sm-"))
        self.db = self.directory / "state.db"
        super().__init__()

    @rule()
    def restart(self) -> None:
        before = observable(self.fabric)
        self.store.close()
        self.fabric = self.open()
        assert observable(self.fabric) == before

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.directory, ignore_errors=True)


RestartingMachine.TestCase.settings = settings(
    max_examples=30, stateful_step_count=40, deadline=None
)
TestRestartingMachine = RestartingMachine.TestCase
