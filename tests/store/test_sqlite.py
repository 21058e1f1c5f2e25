"""The SQLite store: schema checks, atomic writes, append-only history."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from forewarn.fabric import Changes, HistoryEntry, OperationRecord, OperationState
from forewarn.store import SCHEMA_VERSION, SQLiteStore, StoreError
from tests.store.conftest import Database
from tests.support.fabrics import T0, history_kinds, live, submit


def test_new_database_records_its_schema(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "a.db").close()
    with sqlite3.connect(tmp_path / "a.db") as db:
        (version,) = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    assert int(version) == SCHEMA_VERSION


@pytest.mark.parametrize("version", [SCHEMA_VERSION + 1, 0])
def test_schema_version_mismatch_is_refused(tmp_path: Path, version: int) -> None:
    path = tmp_path / "old.db"
    SQLiteStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(version),))
    with pytest.raises(
        StoreError, match=rf"schema {version}, this forewarn needs {SCHEMA_VERSION}"
    ):
        SQLiteStore(path)


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="cannot open database"):
        SQLiteStore(path)


def test_fleet_is_remembered(tmp_path: Path) -> None:
    path = tmp_path / "fleet.db"
    store = SQLiteStore(path)
    assert store.stored_fleet() is None
    store.save_fleet({"scopes": [{"kind": "standalone", "name": "a"}]})
    store.save_fleet({"scopes": [{"kind": "standalone", "name": "b"}]})
    store.close()
    reopened = SQLiteStore(path)
    assert reopened.stored_fleet() == {"scopes": [{"kind": "standalone", "name": "b"}]}
    reopened.close()


def _operation(op_id: str) -> OperationRecord:
    return OperationRecord(
        id=op_id,
        kind="user-reboot",
        target="vm a",
        vms=("a",),
        state=OperationState.SCHEDULED,
        created_at=T0,
        not_before=T0,
        impact_seconds=0,
        hold_seconds=0,
        deletes_vms=False,
    )


def test_apply_is_all_or_nothing() -> None:
    store = SQLiteStore(":memory:")
    store.apply(Changes(operations=[_operation("op-1")], history=[HistoryEntry(at=T0, kind="a")]))
    broken = Changes(
        operations=[_operation("op-2")],
        deleted_vms=["a"],
        history=[HistoryEntry(at=T0, kind="b", detail={"bad": object()})],
    )
    with pytest.raises(TypeError):
        store.apply(broken)
    snapshot = store.load()
    assert [o.id for o in snapshot.operations] == ["op-1"]
    assert snapshot.deleted_vms == []
    assert [h.kind for h in store.history()] == ["a"]
    store.apply(Changes(operations=[_operation("op-3")]))  # still usable
    assert [o.id for o in store.load().operations] == ["op-1", "op-3"]


def test_history_is_append_only_ordered_and_filterable(database: Database) -> None:
    fabric = database.open()
    first = submit(fabric, "user-reboot", "web-0")
    second = submit(fabric, "host-update", host="host-3")
    event_id = live(fabric, first)[0].id
    fabric.approve(fabric.topology.vm("web-1"), [event_id])
    fabric.advance(20 * 60)
    entries = fabric.history(limit=100_000)
    seqs = [h.seq for h in entries]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert [h.at for h in entries] == sorted(h.at for h in entries)
    assert history_kinds(fabric, event_id=event_id) == [
        "event.scheduled",
        "event.approved",
        "event.started",
        "event.completed",
    ]
    assert all(h.event_id == event_id for h in fabric.history(event_id=event_id))
    by_op = fabric.history(operation_id=second.id)
    assert by_op and all(h.operation_id == second.id for h in by_op)
    assert [h.kind for h in by_op][:2] == ["operation.created", "event.scheduled"]
    assert fabric.history(event_id=event_id, operation_id=second.id) == []
    # paging: after/limit walk the same list
    page, after = [], 0
    while chunk := fabric.history(after=after, limit=3):
        page += chunk
        after = chunk[-1].seq
    assert page == entries
    # append-only: what was read once is unchanged later
    submit(fabric, "live-migration", "web-2")
    assert fabric.history(limit=100_000)[: len(entries)] == entries
