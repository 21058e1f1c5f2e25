"""What the PostgreSQL store adds to the Store contract: the change log, its notifications,
fencing of a deposed leader, the leader lock, and surviving lost connections."""

from __future__ import annotations

import msgspec
import pytest

from forewarn.fabric import Changes, HistoryEntry
from forewarn.store import StoreError
from forewarn.store.postgres import Deposed, PostgresStore
from forewarn.store.postgres_cluster import ChangeFeed, LeaderSession
from forewarn.store.schema import migrations
from tests.scaleout.pg import PgDatabase


def _change(kind: str) -> Changes:
    return Changes(history=[HistoryEntry(at=1.0, kind=kind)])


def test_every_change_is_logged_in_order_without_holes_and_announced(pg: PgDatabase) -> None:
    store = PostgresStore(pg.url)
    feed = ChangeFeed(pg.url)
    try:
        store.apply(_change("a"))
        store.apply_all([_change("b"), Changes(), _change("c")])  # an empty one: not logged
        store.apply(Changes())  # a probe: not logged
        assert feed.wait(5.0) == {"forewarn_changes"}
        entries, _, oldest = feed.since(0)
        assert [e.seq for e in entries] == [1, 2, 3] and oldest == 1
        assert [e.changes.history[0].kind for e in entries] == ["a", "b", "c"]
        assert store.head == 3
        assert [e.seq for e in feed.since(2)[0]] == [3]
    finally:
        feed.close()
        store.close()


def test_a_deposed_leader_can_no_longer_write(pg: PgDatabase) -> None:
    old, new = PostgresStore(pg.url), PostgresStore(pg.url)
    first, second = LeaderSession(pg.url), LeaderSession(pg.url)
    try:
        assert first.try_lock() and not second.try_lock()  # one leader at a time
        old.fence(first.take_over("old", "http://127.0.0.1:1"))
        old.apply(_change("before"))
        first.close()  # the old leader's session ends: the lock is free
        assert second.try_lock()
        new.fence(second.take_over("new", "http://127.0.0.1:2"))
        assert new.epoch == (old.epoch or 0) + 1
        with pytest.raises(Deposed, match="no longer leads"):
            old.apply(_change("too late"))
        new.apply(_change("after"))
        assert [h.kind for h in new.history()] == ["before", "after"]
        assert not first.still_leads(old.epoch or 0) and second.still_leads(new.epoch or 0)
    finally:
        first.close()
        second.close()
        old.close()
        new.close()


def test_connections_lost_while_idle_fail_no_write(pg: PgDatabase) -> None:
    """The server dropping every idle connection (a restart, an outage ending) costs no
    write: the pool replaces a dead connection at checkout (it was the first write after
    an outage that failed, in CI, while /healthz already said 200)."""
    store = PostgresStore(pg.url)
    try:
        store.apply(_change("a"))
        for kind in ("after the loss", "b"):
            killed = pg.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            assert killed, "the store's connections were terminated"
            store.apply(_change(kind))
        assert [h.kind for h in store.history()] == ["a", "after the loss", "b"]
    finally:
        store.close()


def test_an_unreachable_server_is_one_clear_error_without_the_password() -> None:
    with pytest.raises(StoreError) as caught:
        PostgresStore("postgresql://postgres:s3cret@127.0.0.1:1/forewarn")
    message = str(caught.value)
    assert message.startswith("cannot connect to postgresql://postgres@127.0.0.1:1/forewarn")
    assert "s3cret" not in message


def test_migrations_are_recorded_and_applied_once(pg: PgDatabase) -> None:
    PostgresStore(pg.url).close()
    PostgresStore(pg.url).close()
    rows = pg.execute("SELECT version, name FROM schema_migrations ORDER BY version")
    shipped = [(version, name) for version, name, _ in migrations()]
    assert rows == shipped and shipped[:2] == [
        (1, "0001_platform_state.sql"),
        (2, "0002_replication.sql"),
    ]


def test_records_are_stored_as_json_an_operator_can_read(pg: PgDatabase) -> None:
    store = PostgresStore(pg.url)
    store.apply(Changes(history=[HistoryEntry(at=1.5, kind="k", detail={"vm": "web-0"})]))
    store.close()
    (detail,) = pg.execute("SELECT convert_from(detail, 'UTF8')::jsonb ->> 'vm' FROM history")
    assert detail == ("web-0",)
    assert msgspec.json.decode(pg.execute("SELECT detail FROM history")[0][0]) == {"vm": "web-0"}
