"""The embedded store: one SQLite file in WAL mode, written through on every transition.

Records are stored as msgspec-encoded JSON next to their key, so the schema stays small
and a PostgreSQL store can mirror it table for table. Every ``apply`` is one
``BEGIN IMMEDIATE`` transaction with ``synchronous=FULL``: once ``apply`` returns, the
change survives a SIGKILL (and a power cut).
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

import msgspec

from ..fabric import (
    Changes,
    EventRecord,
    HistoryEntry,
    OperationRecord,
    RolloutRecord,
    ScopeState,
    Snapshot,
)

__all__ = ["SCHEMA_VERSION", "SQLiteStore", "StoreError"]

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS operations (id TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS events (id TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS rollouts (id TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS scopes (id TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS deleted_vms (name TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS history (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    scope_id TEXT,
    operation_id TEXT,
    event_id TEXT,
    detail BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS history_event ON history (event_id);
CREATE INDEX IF NOT EXISTS history_operation ON history (operation_id);
"""

T = TypeVar("T")


class StoreError(Exception):
    """The database cannot be used (wrong schema, unreadable file)."""


def _upsert(table: str) -> str:
    return (
        f"INSERT INTO {table} (id, data) VALUES (?, ?) "
        "ON CONFLICT(id) DO UPDATE SET data = excluded.data"
    )


class SQLiteStore:
    """A ``forewarn.fabric.Store`` on one SQLite file (or ``:memory:`` for tests)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._lock = _exclusive_lock(self.path)
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.executescript(_SCHEMA)
            self._check_schema()
        except sqlite3.DatabaseError as exc:
            self._release_lock()
            raise StoreError(f"cannot open database {self.path}: {exc}") from None
        except StoreError:
            self._release_lock()
            raise

    def _check_schema(self) -> None:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is None:
            self._db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        elif int(row[0]) != SCHEMA_VERSION:
            raise StoreError(
                f"database {self.path} has schema {row[0]}, this forewarn needs {SCHEMA_VERSION}"
            )

    def _rows(self, table: str, kind: type[T]) -> list[T]:
        rows = self._db.execute(f"SELECT data FROM {table} ORDER BY rowid").fetchall()
        return [msgspec.json.decode(r[0], type=kind) for r in rows]

    def load(self) -> Snapshot:
        """Everything the engine needs to resume."""
        return Snapshot(
            operations=self._rows("operations", OperationRecord),
            events=self._rows("events", EventRecord),
            rollouts=self._rows("rollouts", RolloutRecord),
            scopes=self._rows("scopes", ScopeState),
            deleted_vms=[r[0] for r in self._db.execute("SELECT name FROM deleted_vms")],
        )

    def apply(self, changes: Changes) -> None:
        """Write ``changes`` in one transaction."""
        enc = msgspec.json.encode
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany(_upsert("operations"), _pairs(changes.operations, enc))
            db.executemany(_upsert("events"), _pairs(changes.events, enc))
            db.executemany(
                "DELETE FROM events WHERE id = ?", [(i,) for i in changes.removed_events]
            )
            db.executemany(_upsert("rollouts"), _pairs(changes.rollouts, enc))
            db.executemany(_upsert("scopes"), [(s.scope_id, enc(s)) for s in changes.scopes])
            db.executemany(
                "INSERT OR IGNORE INTO deleted_vms (name) VALUES (?)",
                [(n,) for n in changes.deleted_vms],
            )
            db.executemany(
                "INSERT INTO history (at, kind, scope_id, operation_id, event_id, detail) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (h.at, h.kind, h.scope_id, h.operation_id, h.event_id, enc(h.detail))
                    for h in changes.history
                ],
            )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def history(
        self,
        *,
        after: int = 0,
        limit: int = 1000,
        event_id: str | None = None,
        operation_id: str | None = None,
        newest: bool = False,
    ) -> list[HistoryEntry]:
        """History entries after ``seq``, oldest first, optionally for one event/operation;
        with ``newest``, the last ``limit`` such entries."""
        sql = "SELECT seq, at, kind, scope_id, operation_id, event_id, detail FROM history "
        sql += "WHERE seq > ?"
        args: list[Any] = [after]
        if event_id is not None:
            sql += " AND event_id = ?"
            args.append(event_id)
        if operation_id is not None:
            sql += " AND operation_id = ?"
            args.append(operation_id)
        sql += " ORDER BY seq DESC LIMIT ?" if newest else " ORDER BY seq LIMIT ?"
        args.append(limit)
        entries = [
            HistoryEntry(
                seq=seq,
                at=at,
                kind=kind,
                scope_id=scope,
                operation_id=op,
                event_id=ev,
                detail=msgspec.json.decode(detail),
            )
            for seq, at, kind, scope, op, ev, detail in self._db.execute(sql, args)
        ]
        return entries[::-1] if newest else entries

    def stored_fleet(self) -> dict[str, Any] | None:
        """The fleet this database was created with."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'fleet'").fetchone()
        if row is None:
            return None
        fleet: dict[str, Any] = msgspec.json.decode(row[0])
        return fleet

    def save_fleet(self, fleet: dict[str, Any]) -> None:
        """Remember the fleet (kept across restarts, so ``--fleet`` can be omitted)."""
        self._db.execute(
            "INSERT INTO meta (key, value) VALUES ('fleet', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (msgspec.json.encode(fleet).decode(),),
        )

    def clock_position(self) -> float | None:
        """The last saved position of a virtual clock."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'clock'").fetchone()
        return None if row is None else float(row[0])

    def save_clock_position(self, position: float) -> None:
        """Save a virtual clock's position (durably, before anyone sees the new time)."""
        self._db.execute(
            "INSERT INTO meta (key, value) VALUES ('clock', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (repr(position),),
        )

    def close(self) -> None:
        """Close the connection and let another server open the database."""
        self._db.close()
        self._release_lock()

    def _release_lock(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None


def _exclusive_lock(path: str) -> IO[bytes] | None:
    """One server per database: two would overwrite each other's counters.

    The lock is on a ``<db>.lock`` file and ends with the process, even on SIGKILL.
    """
    if path == ":memory:" or path.startswith("file:"):
        return None
    real = os.path.realpath(path)  # a symlink must not get a lock of its own
    lock = open(f"{real}.lock", "ab")  # noqa: SIM115 - held open for the store's lifetime
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        raise StoreError(f"database {path} is in use by another forewarn server") from None
    return lock


def _pairs(
    records: Sequence[OperationRecord | EventRecord | RolloutRecord], enc: Any
) -> Iterable[tuple[str, bytes]]:
    return [(r.id, enc(r)) for r in records]
