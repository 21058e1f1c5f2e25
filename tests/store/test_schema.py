"""The schema is written once (the migration files) and serves both dialects.

A new SQLite database must have exactly the layout of schema version 1 (the golden file
was taken from the databases forewarn created before the schema had one source), and the
tables both dialects share must have the same columns in PostgreSQL and in SQLite.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from forewarn.store import SQLiteStore
from forewarn.store.postgres import PostgresStore
from forewarn.store.schema import SQLITE_SCHEMA, to_sqlite
from tests.scaleout.pg import PgDatabase, pg_database

GOLDEN = Path(__file__).parent / "golden" / "sqlite_schema_1.txt"

#: PostgreSQL's type of each SQLite column type (the translation's inverse).
_PG_TYPE = {"TEXT": "text", "BLOB": "bytea", "REAL": "double precision", "INTEGER": "bigint"}


def sqlite_layout(path: Path) -> str:
    """Every table's columns (type, NOT NULL, key) and every index, one line each."""
    db = sqlite3.connect(path)
    lines = []
    try:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in sorted(names):
            for _, name, kind, notnull, default, pk in db.execute(f"PRAGMA table_info({table})"):
                lines.append(f"{table}.{name} {kind} notnull={notnull} default={default} pk={pk}")
            for _, index, unique, origin, _ in db.execute(f"PRAGMA index_list({table})"):
                cols = [r[2] for r in db.execute(f"PRAGMA index_info({index})")]
                lines.append(f"{table} index {index} ({', '.join(cols)}) unique={unique} {origin}")
    finally:
        db.close()
    return "\n".join(lines) + "\n"


def test_a_new_sqlite_database_has_the_layout_of_schema_1(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "new.db").close()
    layout = sqlite_layout(tmp_path / "new.db")
    if os.environ.get("FOREWARN_WRITE_GOLDEN"):
        GOLDEN.write_text(layout)
    assert layout == GOLDEN.read_text()


def test_the_sqlite_schema_is_written_in_sqlite_words() -> None:
    assert "BYTEA" not in SQLITE_SCHEMA and "DOUBLE PRECISION" not in SQLITE_SCHEMA
    assert "pos " not in SQLITE_SCHEMA  # SQLite's rowid keeps the insertion order
    assert "seq INTEGER PRIMARY KEY AUTOINCREMENT" in SQLITE_SCHEMA


@pytest.mark.parametrize(
    "column", ["at TIMESTAMPTZ NOT NULL", "n SERIAL", "doc JSONB", "x BIGINT DEFAULT 1::int"]
)
def test_a_type_sqlite_has_no_word_for_is_refused(column: str) -> None:
    with pytest.raises(ValueError, match="no SQLite"):
        to_sqlite(f"CREATE TABLE t (id TEXT PRIMARY KEY, {column});")


@pytest.fixture
def pg() -> Iterator[PgDatabase]:
    yield from pg_database()


def test_both_dialects_have_the_same_shared_tables(tmp_path: Path, pg: PgDatabase) -> None:
    PostgresStore(pg.url).close()  # applies the migrations
    SQLiteStore(tmp_path / "same.db").close()
    db = sqlite3.connect(tmp_path / "same.db")
    try:
        tables = [
            r[0]
            for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")
            if r[0] != "sqlite_sequence"
        ]
        in_sqlite = {
            (table, name, _PG_TYPE[kind], bool(notnull))
            for table in tables
            for _, name, kind, notnull, _, _ in db.execute(f"PRAGMA table_info({table})")
        }
    finally:
        db.close()
    rows = pg.execute(
        "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns"
        " WHERE table_schema = 'public' AND table_name = ANY(%s) AND column_name <> 'pos'",
        (tables,),
    )
    in_postgres = {(t, c, kind, nullable == "NO") for t, c, kind, nullable in rows}
    # SQLite's key columns accept NULL unless declared NOT NULL; PostgreSQL's never do.
    assert {(t, c, k) for t, c, k, _ in in_sqlite} == {(t, c, k) for t, c, k, _ in in_postgres}
    assert {r for r in in_sqlite if r[3]} <= {r for r in in_postgres if r[3]}
    assert len(tables) == 16


def _older_database(tmp_path: Path, script: str) -> Path:
    """A database of this forewarn made to look older by ``script`` (tables dropped,
    columns removed, rows of then put in)."""
    path = tmp_path / "old.db"
    SQLiteStore(path).close()
    db = sqlite3.connect(path)
    db.executescript(script)
    db.close()
    return path


def test_a_database_of_a_forewarn_before_reactions_gets_their_tables(tmp_path: Path) -> None:
    path = _older_database(
        tmp_path, "DROP TABLE reaction_events; DROP TABLE reaction_vms; DROP TABLE reaction_polls;"
    )
    SQLiteStore(path).close()
    assert sqlite_layout(path) == GOLDEN.read_text()


def test_a_database_before_pending_notices_gets_their_table(tmp_path: Path) -> None:
    path = _older_database(
        tmp_path,
        "DROP TABLE eventgrid_pending;"
        "INSERT INTO eventgrid_subscriptions (name, body) VALUES ('ops', '{}');",
    )
    store = SQLiteStore(path)
    try:
        assert store.eventgrid_pending() == []
        assert store.eventgrid_subscriptions() == ["{}"]
    finally:
        store.close()
    assert sqlite_layout(path) == GOLDEN.read_text()


def test_a_database_before_the_outbox_gets_its_table(tmp_path: Path) -> None:
    path = _older_database(tmp_path, "DROP TABLE outbox;")
    store = SQLiteStore(path)
    try:
        assert store.outbox("eventgrid") == []
    finally:
        store.close()
    assert sqlite_layout(path) == GOLDEN.read_text()


def test_a_database_before_the_history_kind_index_gets_it(tmp_path: Path) -> None:
    path = _older_database(tmp_path, "DROP INDEX history_kind;")
    SQLiteStore(path).close()
    assert sqlite_layout(path) == GOLDEN.read_text()


def test_a_database_before_via_gets_the_columns_and_keeps_its_facts(tmp_path: Path) -> None:
    path = _older_database(
        tmp_path,
        "ALTER TABLE reaction_operations DROP COLUMN via;"
        "ALTER TABLE reaction_events DROP COLUMN approved_via;"
        "INSERT INTO reaction_operations (id, kind) VALUES ('op-old', 'user-reboot');",
    )
    SQLiteStore(path).close()
    assert sqlite_layout(path) == GOLDEN.read_text()
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT id, kind, via FROM reaction_operations").fetchall()
    finally:
        db.close()
    assert rows == [("op-old", "user-reboot", None)]


def test_the_history_of_one_kind_is_found_by_its_index(tmp_path: Path) -> None:
    # the dashboard asks for the fleet resets since the end it last saw: after a region
    # rollout over a million VMs, a scan of the entries in between reads millions
    store = SQLiteStore(tmp_path / "kinds.db")
    statements: list[str] = []
    try:
        store._reader.set_trace_callback(statements.append)
        store.history(after=0, kind="fleet.reset", limit=10)
    finally:
        store.close()
    (sql,) = [s for s in statements if "FROM history" in s]
    db = sqlite3.connect(tmp_path / "kinds.db")
    try:
        plan = " ".join(str(row[3]) for row in db.execute(f"EXPLAIN QUERY PLAN {sql}"))
    finally:
        db.close()
    assert "INDEX history_kind (kind=? AND seq>?)" in plan, plan
