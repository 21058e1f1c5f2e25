"""The Store contract, run against every store: SQLite (a file) and PostgreSQL (a database).

What the fabric relies on: all-or-nothing writes, records back as written and in creation
order, an append-only filterable history, remembered fleet/settings/clock, a restart
that shows exactly what was shown before, and clear refusals of damaged databases.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from forewarn.contract import EventSource, EventStatus, EventType
from forewarn.fabric import (
    Changes,
    Clock,
    EventRecord,
    Fabric,
    HistoryEntry,
    OperationRecord,
    OperationRequest,
    OperationState,
    OutboxEntry,
    RolloutRecord,
    ScopeState,
    StoreUnavailable,
)
from forewarn.rehearsal import EventFacts, ReactionData, VmPolls, VmReaction
from forewarn.rehearsal.facts import DeliveryFacts
from forewarn.store import SQLiteStore, StoreError
from forewarn.store.postgres import PostgresStore
from tests.scaleout.pg import PgDatabase, pg_database
from tests.support.fabrics import MINUTE, T0, live, make_fabric, observable, submit


class Backend:
    """One database of one store kind: open stores on it, and damage it for real."""

    kind: str

    def open(self) -> Any:
        raise NotImplementedError

    def sql(self, statement: str) -> None:
        """Run SQL on the database behind the store's back."""
        raise NotImplementedError

    def set_newer_schema(self) -> None:
        raise NotImplementedError


class SQLiteBackend(Backend):
    kind = "sqlite"

    def __init__(self, path: Path) -> None:
        self.path = path

    def open(self) -> SQLiteStore:
        return SQLiteStore(self.path)

    def sql(self, statement: str) -> None:
        with sqlite3.connect(self.path) as db:
            db.execute(statement)

    def set_newer_schema(self) -> None:
        self.sql("UPDATE meta SET value = '999' WHERE key = 'schema'")


class PostgresBackend(Backend):
    kind = "postgresql"

    def __init__(self, database: PgDatabase) -> None:
        self.database = database

    def open(self) -> PostgresStore:
        return PostgresStore(self.database.url)

    def sql(self, statement: str) -> None:
        self.database.execute(statement)

    def set_newer_schema(self) -> None:
        self.sql("INSERT INTO schema_migrations (version, name) VALUES (999, '0999_future.sql')")


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        yield SQLiteBackend(tmp_path / "contract.db")
        return
    yield from (PostgresBackend(db) for db in pg_database())


@pytest.fixture
def open_store(backend: Backend) -> Iterator[Callable[[], Any]]:
    """Open stores on the backend's database; each is closed after the test."""
    opened: list[Any] = []

    def open_one() -> Any:
        if opened:
            opened[-1].close()  # one server at a time (SQLite locks its file)
        store = backend.open()
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.close()


def _operation(op_id: str, **fields: Any) -> OperationRecord:
    values: dict[str, Any] = dict(
        id=op_id, kind="user-reboot", target="vm a", vms=("a",), state=OperationState.SCHEDULED,
        created_at=T0, not_before=T0 + 900, impact_seconds=60.0, hold_seconds=600.0,
        deletes_vms=False,
    )  # fmt: skip
    values.update(fields)
    return OperationRecord(**values)


def _event(event_id: str, **fields: Any) -> EventRecord:
    values: dict[str, Any] = dict(
        id=event_id, operation_id="op-1", scope_id="web", event_type=EventType.REBOOT,
        source=EventSource.USER, status=EventStatus.SCHEDULED, resources=("web-0",),
        description="a réboot ☃", duration_seconds=-1, created_at=T0, not_before=T0 + 900.5,
    )  # fmt: skip
    values.update(fields)
    return EventRecord(**values)


def test_a_new_database_is_empty(open_store: Callable[[], Any]) -> None:
    store = open_store()
    snapshot = store.load()
    assert (snapshot.operations, snapshot.events, snapshot.rollouts) == ([], [], [])
    assert (snapshot.scopes, snapshot.deleted_vms) == ([], [])
    assert store.history() == []
    assert store.stored_fleet() is None
    assert store.stored_settings() == {}
    assert store.clock_position() is None


def test_records_come_back_as_written_in_creation_order(open_store: Callable[[], Any]) -> None:
    store = open_store()
    events = [_event(f"E{i}", not_before=T0 + i) for i in (3, 1, 2)]
    rollout = RolloutRecord(
        id="rollout-1", kind="platform-reboot", scope_id="web",
        batches=(("web-0", "web-3"), ("web-1",)), next_batch=1, current_operation="op-1",
        options={"notice_seconds": 60.0},
    )  # fmt: skip
    store.apply(
        Changes(
            operations=[_operation("op-1")],
            events=events,
            rollouts=[rollout],
            scopes=[ScopeState(scope_id="web", incarnation=7, last_request_at=T0 + 0.25)],
            deleted_vms=["workers_1"],
        )
    )
    # An update keeps a record's place; a removed event is gone.
    approved = _event("E3", not_before=T0 + 3, approved_by="web-3", approved_at=T0 + 1)
    store.apply(Changes(events=[approved], removed_events=["E1"], deleted_vms=["workers_1"]))
    snapshot = open_store().load()
    assert snapshot.operations == [_operation("op-1")]
    assert snapshot.events == [approved, events[2]]
    assert snapshot.rollouts == [rollout]
    assert snapshot.scopes == [ScopeState(scope_id="web", incarnation=7, last_request_at=T0 + 0.25)]
    assert snapshot.deleted_vms == ["workers_1"]


def test_a_write_is_all_or_nothing(open_store: Callable[[], Any]) -> None:
    store = open_store()
    store.apply(Changes(operations=[_operation("op-1")], history=[HistoryEntry(at=T0, kind="a")]))
    broken = Changes(
        operations=[_operation("op-2")],
        deleted_vms=["a"],
        history=[HistoryEntry(at=T0, kind="b", detail={"bad": object()})],
    )
    with pytest.raises(TypeError):
        store.apply(broken)
    with pytest.raises(TypeError):  # a group holding one bad change writes none of them
        store.apply_all([Changes(operations=[_operation("op-3")]), broken])
    snapshot = store.load()
    assert [o.id for o in snapshot.operations] == ["op-1"]
    assert snapshot.deleted_vms == []
    assert [h.kind for h in store.history()] == ["a"]
    store.apply(Changes(operations=[_operation("op-4")]))  # still usable
    assert [o.id for o in store.load().operations] == ["op-1", "op-4"]


def test_a_group_is_written_in_order(open_store: Callable[[], Any]) -> None:
    store = open_store()
    store.apply_all(
        [
            Changes(events=[_event("E1")], history=[HistoryEntry(at=T0, kind="one")]),
            Changes(events=[_event("E1", status=EventStatus.STARTED)]),
            Changes(removed_events=["E1"], history=[HistoryEntry(at=T0 + 1, kind="two")]),
            Changes(events=[_event("E2")]),
            Changes(),  # an empty change in a group writes nothing
        ]
    )
    assert [e.id for e in store.load().events] == ["E2"]
    assert [h.kind for h in store.history()] == ["one", "two"]
    store.apply(Changes())  # a probe: a harmless write
    assert [h.kind for h in store.history()] == ["one", "two"]


def test_history_is_append_only_ordered_and_filterable(open_store: Callable[[], Any]) -> None:
    fabric = make_fabric(store=open_store(), enablement="always")
    first = submit(fabric, "user-reboot", "web-0")
    second = submit(fabric, "host-update", host="host-3")
    event_id = live(fabric, first)[0].id
    fabric.approve(fabric.topology.vm("web-1"), [event_id])
    fabric.advance(20 * MINUTE)
    entries = fabric.history(limit=100_000)
    seqs = [h.seq for h in entries]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs) and seqs[0] >= 1
    kinds = [h.kind for h in fabric.history(event_id=event_id)]
    assert kinds == ["event.scheduled", "event.approved", "event.started", "event.completed"]
    by_op = fabric.history(operation_id=second.id)
    assert by_op and all(h.operation_id == second.id for h in by_op)
    assert fabric.history(event_id=event_id, operation_id=second.id) == []
    started = [h for h in entries if h.kind == "event.started"]
    assert len(started) >= 2 and fabric.history(kind="event.started") == started
    assert fabric.history(kind="event.started", after=started[0].seq) == started[1:]
    approved = [h for h in entries if h.kind == "event.approved" and h.event_id == event_id]
    assert approved and fabric.history(kind="event.approved", event_id=event_id) == approved
    assert fabric.history(newest=True, limit=2) == entries[-2:]
    page, after = [], 0
    while chunk := fabric.history(after=after, limit=3):
        page += chunk
        after = chunk[-1].seq
    assert page == entries
    submit(fabric, "live-migration", "web-2")
    assert fabric.history(limit=100_000)[: len(entries)] == entries


def test_fleet_settings_and_clock_are_remembered(open_store: Callable[[], Any]) -> None:
    store = open_store()
    store.save_fleet({"scopes": [{"kind": "standalone", "name": "a"}]})
    store.save_fleet({"scopes": [{"kind": "standalone", "name": "b"}]})
    store.save_settings({"clock": "virtual", "time_scale": 60.0})
    store.save_clock_position(T0 + 0.5)
    store.apply(Changes(clock_position=T0 + 90.25))
    again = open_store()
    assert again.stored_fleet() == {"scopes": [{"kind": "standalone", "name": "b"}]}
    assert again.stored_settings() == {"clock": "virtual", "time_scale": 60.0}
    assert again.clock_position() == T0 + 90.25


def _busy(fabric: Fabric) -> None:
    approved = live(fabric, submit(fabric, "user-reboot", "web-0"))[0].id
    fabric.approve(fabric.topology.vm("web-3"), [approved.lower()])
    host = submit(fabric, "host-update", host="host-3")
    partly = live(fabric, host)[0]
    fabric.approve(fabric.topology.vm(partly.resources[0]), [partly.id])
    evicted = live(fabric, submit(fabric, "spot-eviction", "workers_1"))[0].id
    fabric.start_event(evicted)
    fabric.submit(OperationRequest(kind="platform-reboot", scope="shop"))
    fabric.advance(MINUTE)  # the eviction completes: workers_1 is deleted


def test_a_restart_shows_exactly_what_was_shown(open_store: Callable[[], Any]) -> None:
    clock = Clock.virtual(start=T0)
    fabric = make_fabric(store=open_store(), clock=clock, enablement="always")
    _busy(fabric)
    before = observable(fabric)
    again = make_fabric(store=open_store(), clock=clock, enablement="always")
    assert observable(again) == before
    assert again.is_deleted("workers_1")
    again.advance(20 * MINUTE)  # timers resume from absolute instants
    assert {r.done for r in again.rollouts()} == {False}
    assert again.view("web").incarnation > before["views"]["web"].incarnation


def test_a_schema_from_a_newer_forewarn_is_refused(
    backend: Backend, open_store: Callable[[], Any]
) -> None:
    open_store().close()
    backend.set_newer_schema()
    with pytest.raises(StoreError, match="999"):
        backend.open()


def test_a_missing_table_is_refused_naming_it(
    backend: Backend, open_store: Callable[[], Any]
) -> None:
    open_store().close()
    backend.sql("DROP TABLE events")
    with pytest.raises(StoreError, match="table events is missing"):
        backend.open().load()


def test_a_damaged_row_is_refused_naming_its_table(
    backend: Backend, open_store: Callable[[], Any]
) -> None:
    store = open_store()
    store.apply(Changes(operations=[_operation("op-1")]))
    store.close()
    if backend.kind == "sqlite":
        backend.sql("UPDATE operations SET data = 'not json'")
    else:
        backend.sql("UPDATE operations SET data = convert_to('not json', 'UTF8')")
    with pytest.raises(StoreError, match="table operations cannot be read"):
        backend.open().load()


def test_a_store_that_cannot_write_says_so_and_changes_nothing(
    open_store: Callable[[], Any],
) -> None:
    store = open_store()
    store.apply(Changes(operations=[_operation("op-1")]))
    store.close()
    with pytest.raises(StoreUnavailable):
        store.apply(Changes(operations=[_operation("op-2")]))
    assert [o.id for o in open_store().load().operations] == ["op-1"]


# ----------------------------------------------------------------- reaction tracking


def _facts(event_id: str, **fields: Any) -> EventFacts:
    return EventFacts(id=event_id, **fields)


def test_reaction_facts_are_merged_never_overwritten(open_store: Callable[[], Any]) -> None:
    """Each front-end writes what it saw: the earliest sighting and approval, the latest
    poll, and the first value known of each event fact win, whoever writes last."""
    store = open_store()
    assert store.reactions() == ReactionData()
    assert store.reactions_written() == 0
    store.save_reactions(
        ReactionData(
            events=[_facts("E1", scope_id="web", resources=("web-0", "web-3"), created_at=T0,
                           not_before=T0 + 900)],
            vms=[VmReaction(event_id="E1", vm="web-0", first_seen=T0 + 5, incarnation=4)],
            polls=[VmPolls(vm="web-0", first_poll=T0, last_poll=T0 + 5, api_version="2019-01-01")],
        )
    )  # fmt: skip
    store.save_reactions(  # another front-end: it saw it earlier, approved, polled later
        ReactionData(
            events=[_facts("E1", scope_id="other", resources=("web-0",), approved_by="web-0",
                           approved_at=T0 + 7, started_at=T0 + 7, start_reason="approved")],
            vms=[
                VmReaction(event_id="E1", vm="web-0", first_seen=T0 + 2, incarnation=3,
                           approved_at=T0 + 7, last_poll_before_start=T0 + 6.5),
                VmReaction(event_id="E1", vm="web-3", seen_started=T0 + 8),
            ],
            polls=[VmPolls(vm="web-0", first_poll=T0 + 1, last_poll=T0 + 9,
                           api_version="2020-07-01")],
        )
    )  # fmt: skip
    store.save_reactions(  # a late, stale writer changes nothing it did not know first
        ReactionData(
            vms=[VmReaction(event_id="E1", vm="web-0", first_seen=T0 + 30,
                            last_poll_before_start=T0 + 1)],
            polls=[VmPolls(vm="web-0", first_poll=T0 + 2, last_poll=T0 + 3,
                           api_version="2017-08-01")],
        )
    )  # fmt: skip
    reopened = open_store()
    assert reopened.reactions_written() == 3  # every write counted, by whoever wrote it
    data = reopened.reactions()
    assert data.events == [
        _facts("E1", scope_id="web", resources=("web-0", "web-3"), created_at=T0,
               not_before=T0 + 900, approved_by="web-0", approved_at=T0 + 7,
               started_at=T0 + 7, start_reason="approved")
    ]  # fmt: skip
    assert data.vms == [
        VmReaction(event_id="E1", vm="web-0", first_seen=T0 + 2, incarnation=3,
                   approved_at=T0 + 7, last_poll_before_start=T0 + 6.5),
        VmReaction(event_id="E1", vm="web-3", seen_started=T0 + 8),
    ]  # fmt: skip
    assert data.polls == [
        VmPolls(vm="web-0", first_poll=T0, last_poll=T0 + 9, api_version="2020-07-01")
    ]
    assert reopened.polls() == data.polls


def test_a_fleets_polls_in_one_batch_are_merged_exactly(open_store: Callable[[], Any]) -> None:
    """The tracker hands over thousands of VMs' polls as rows in one batch, a VM's rows
    from more than one source merged as any two writers' (PostgreSQL takes them as one
    JSON parameter: every time must come back to the last bit)."""
    store = open_store()
    store.save_reactions(ReactionData(polls=[VmPolls(vm="vm-0", first_poll=T0, last_poll=T0 + 0.25,
                                                     api_version="2019-01-01")]))  # fmt: skip
    rows = [(f"vm-{i}", T0 + i / 7, T0 + i / 7 + 0.1 + 0.2, None if i % 3 else "2020-07-01")
            for i in range(5000)]  # fmt: skip
    store.save_reactions(
        ReactionData(
            polls=[VmPolls(vm="vm-1", first_poll=T0 - 5, last_poll=T0 + 99,
                           api_version="2017-08-01")],
            poll_rows=rows,  # vm-1 again, older and newer: the earliest first, the latest last
        )
    )  # fmt: skip
    polls = {p.vm: p for p in open_store().polls()}
    assert len(polls) == 5000
    assert polls["vm-0"] == VmPolls(vm="vm-0", first_poll=T0, last_poll=T0 + 0.1 + 0.2,
                                    api_version="2020-07-01")  # fmt: skip
    assert polls["vm-1"] == VmPolls(vm="vm-1", first_poll=T0 - 5, last_poll=T0 + 99,
                                    api_version="2017-08-01")  # fmt: skip
    assert polls["vm-4999"] == VmPolls(vm="vm-4999", first_poll=T0 + 4999 / 7,
                                       last_poll=T0 + 4999 / 7 + 0.1 + 0.2)  # fmt: skip
    assert polls["vm-3"].api_version == "2020-07-01" and polls["vm-3"].last_poll == rows[3][2]


def test_reactions_since_a_time_leave_older_events_out(open_store: Callable[[], Any]) -> None:
    store = open_store()
    store.save_reactions(
        ReactionData(
            events=[_facts("OLD", created_at=T0), _facts("NEW", created_at=T0 + 60)],
            vms=[VmReaction(event_id="OLD", vm="a", first_seen=T0 + 1),
                 VmReaction(event_id="NEW", vm="a", first_seen=T0 + 61)],
            polls=[VmPolls(vm="a", first_poll=T0, last_poll=T0 + 61)],
        )
    )  # fmt: skip
    recent = store.reactions(since=T0 + 30)
    assert [e.id for e in recent.events] == ["NEW"]
    assert [r.event_id for r in recent.vms] == ["NEW"]
    assert [p.vm for p in recent.polls] == ["a"]  # polls are never filtered
    assert [e.id for e in store.reactions().events] == ["OLD", "NEW"]


def test_deliveries_keep_the_earliest_times_and_the_most_attempts(
    open_store: Callable[[], Any],
) -> None:
    store = open_store()
    store.save_reactions(
        ReactionData(
            events=[_facts("OLD", created_at=T0), _facts("E1", created_at=T0 + 60)],
            deliveries=[
                DeliveryFacts(event_id="E1", subscription="ops", first_attempt=T0 + 61,
                              attempts=1),
                DeliveryFacts(event_id="OLD", subscription="ops", first_attempt=T0 + 1),
            ],
        )
    )  # fmt: skip
    store.save_reactions(
        ReactionData(deliveries=[
            DeliveryFacts(event_id="E1", subscription="ops", first_attempt=T0 + 70,
                          scheduled_at=T0 + 70, delivered_at=T0 + 70, attempts=3),
            DeliveryFacts(event_id="E1", subscription="audit", failed_at=T0 + 90, attempts=2),
        ])
    )  # fmt: skip
    store.save_reactions(  # a stale writer: later times, fewer attempts
        ReactionData(deliveries=[
            DeliveryFacts(event_id="E1", subscription="ops", first_attempt=T0 + 99,
                          delivered_at=T0 + 99, attempts=1),
        ])
    )  # fmt: skip
    reopened = open_store()
    assert reopened.reactions(since=T0 + 30).deliveries == [
        DeliveryFacts(event_id="E1", subscription="audit", failed_at=T0 + 90, attempts=2),
        DeliveryFacts(event_id="E1", subscription="ops", first_attempt=T0 + 61,
                      scheduled_at=T0 + 70, delivered_at=T0 + 70, attempts=3),
    ]  # fmt: skip
    assert len(reopened.reactions().deliveries) == 3


def test_eventgrid_subscriptions_are_kept_replaced_and_deleted(
    open_store: Callable[[], Any],
) -> None:
    store = open_store()
    assert store.eventgrid_subscriptions() == []
    store.save_eventgrid_subscription("Ops", '{"v": 1}')
    store.save_eventgrid_subscription("audit", '{"v": 2}')
    store.save_eventgrid_subscription("ops", '{"v": 3}')  # names are case-insensitive
    reopened = open_store()
    assert reopened.eventgrid_subscriptions() == ['{"v": 2}', '{"v": 3}']
    reopened.delete_eventgrid_subscription("OPS")
    reopened.delete_eventgrid_subscription("nobody")
    assert open_store().eventgrid_subscriptions() == ['{"v": 2}']


def test_eventgrid_pending_notices_are_kept_updated_and_forgotten(
    open_store: Callable[[], Any],
) -> None:
    """A notice waiting for a webhook is kept (its body never changes; its attempts and
    next due time do), forgotten once settled, and with its subscription."""
    store = open_store()
    assert store.eventgrid_pending() == []
    store.save_eventgrid_pending(
        [("Ops", "n1", '{"a": "☃"}', 0, T0, T0 + 10.5), ("audit", "n2", "{}", 0, T0, T0)], []
    )
    store.save_eventgrid_pending([("ops", "n1", '{"ignored": 1}', 2, T0 + 99, T0 + 40.25)], [])
    store.save_eventgrid_pending([("ops", "n3", "{}", 1, T0, T0 + 5)], [("AUDIT", "n2")])
    store.save_eventgrid_pending([], [("ops", "nobody")])
    reopened = open_store()
    assert reopened.eventgrid_pending() == [  # the soonest due first
        ("ops", "n3", "{}", 1, T0, T0 + 5),
        ("ops", "n1", '{"a": "☃"}', 2, T0, T0 + 40.25),
    ]
    reopened.save_eventgrid_pending([("audit", "n4", "{}", 0, T0, T0)], [])
    reopened.save_eventgrid_subscription("ops", '{"v": 1}')
    reopened.delete_eventgrid_subscription("OPS")
    assert open_store().eventgrid_pending() == [("audit", "n4", "{}", 0, T0, T0)]


def test_a_refused_pending_write_changes_nothing(open_store: Callable[[], Any]) -> None:
    store = open_store()
    store.save_eventgrid_pending([("ops", "n1", "{}", 0, T0, T0)], [])
    store.close()
    with pytest.raises(StoreUnavailable):
        store.save_eventgrid_pending([("ops", "n2", "{}", 0, T0, T0)], [("ops", "n1")])
    assert [row[1] for row in open_store().eventgrid_pending()] == ["n1"]


def test_what_a_change_owes_is_written_with_it_and_deleted_once_taken(
    open_store: Callable[[], Any],
) -> None:
    """The outbox: a change's messages are written in its transaction (a change that
    cannot be written leaves none), come back in the order the changes were made, per
    channel, and go in the transaction that keeps them pending for the subscribers."""
    store = open_store()
    store.apply(
        Changes(
            events=[_event("E1")],
            outbox=[OutboxEntry(id="n2", channel="eventgrid", body='{"s": "☃"}')],
        )
    )
    store.apply_all(
        [
            Changes(
                events=[_event("E2")], outbox=[OutboxEntry(id="n1", channel="eventgrid", body="{}")]
            ),
            Changes(outbox=[OutboxEntry(id="x1", channel="other", body="[]")]),
        ]
    )
    broken = Changes(
        outbox=[OutboxEntry(id="n3", channel="eventgrid", body="{}")],
        history=[HistoryEntry(at=T0, kind="b", detail={"bad": object()})],
    )
    with pytest.raises(TypeError):
        store.apply(broken)
    reopened = open_store()
    assert reopened.outbox("eventgrid") == [("n2", '{"s": "☃"}'), ("n1", "{}")]
    assert reopened.outbox("other") == [("x1", "[]")]
    reopened.save_eventgrid_pending([("ops", "n2", '{"s": "☃"}', 0, T0, T0)], [], ["n2"])
    reopened = open_store()
    assert reopened.outbox("eventgrid") == [("n1", "{}")]
    assert reopened.eventgrid_pending() == [("ops", "n2", '{"s": "☃"}', 0, T0, T0)]
    reopened.close()
    with pytest.raises(StoreUnavailable):  # refused: the pending row and the delete both
        reopened.save_eventgrid_pending([("ops", "n1", "{}", 0, T0, T0)], [], ["n1"])
    reopened = open_store()
    assert reopened.outbox("eventgrid") == [("n1", "{}")]
    assert [row[1] for row in reopened.eventgrid_pending()] == ["n2"]


def test_a_closed_store_refuses_reactions(open_store: Callable[[], Any]) -> None:
    store = open_store()
    store.close()
    with pytest.raises(StoreUnavailable):
        store.save_reactions(ReactionData(polls=[VmPolls(vm="a", last_poll=T0)]))


def test_a_reset_is_durable_and_incarnations_never_go_back(open_store: Callable[[], Any]) -> None:
    """``forewarn fleet reset`` on either store: after a restart, no event, operation or
    rollout, every VM back, the history kept, each incarnation one higher than before."""
    clock = Clock.virtual(start=T0)
    fabric = make_fabric(store=open_store(), clock=clock, enablement="always")
    _busy(fabric)
    assert fabric.is_deleted("workers_1") and fabric.events() and fabric.rollouts()
    before = {sid: fabric.view(sid).incarnation for sid in fabric.topology.scopes}
    history = len(fabric.history(limit=1_000_000))
    detail = fabric.reset()
    assert detail["restored_vms"] == ["workers_1"]
    again = make_fabric(store=open_store(), clock=clock, enablement="always")
    assert again.events() == [] and again.operations() == [] and again.rollouts() == []
    assert not again.is_deleted("workers_1")
    assert {sid: again.view(sid).incarnation for sid in again.topology.scopes} == {
        sid: n + 1 for sid, n in before.items()
    }
    entries = again.history(limit=1_000_000)
    assert len(entries) == history + 1 and entries[-1].kind == "fleet.reset"
    op = again.submit(OperationRequest(kind="spot-eviction", vms=("workers_1",)))
    assert op.vms == ("workers_1",)  # the restored VM can be evicted again


def _region_waves(fabric: Fabric, stop_after: int | None = None) -> list[tuple[str, ...]]:
    """Advance a region rollout wave by wave: each new wave's VMs (``stop_after`` waves)."""
    waves: list[tuple[str, ...]] = []
    seen: set[str] = set()
    while stop_after is None or len(waves) < stop_after:
        ops = [o for o in fabric.operations() if o.target == "region" and o.id not in seen]
        for op in ops:
            seen.add(op.id)
            waves.append(tuple(sorted(op.vms)))
        due = fabric.next_due()
        if due is None:
            break
        fabric.advance(due - fabric.clock.now())
    return waves


def test_a_region_rollout_resumes_at_its_wave_after_a_restart(
    open_store: Callable[[], Any],
) -> None:
    request = OperationRequest(kind="platform-reboot", region=True, wave_hosts=2)
    uninterrupted = make_fabric(enablement="always")
    uninterrupted.submit(request)
    whole = _region_waves(uninterrupted)
    assert len(whole) == 5
    clock = Clock.virtual(start=T0)
    fabric = make_fabric(store=open_store(), clock=clock, enablement="always")
    fabric.submit(request)
    assert _region_waves(fabric, stop_after=2) == whole[:2]
    (rollout,) = fabric.rollouts()
    assert (rollout.next_batch, rollout.cursor) == (2, (1, 0))  # next: update domain 1
    again = make_fabric(store=open_store(), clock=clock, enablement="always")
    assert again.rollouts() == [rollout]
    assert _region_waves(again) == whole, "every wave once, in order, across the restart"
    assert again.rollouts()[0].done
