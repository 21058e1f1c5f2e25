"""The embedded store: one SQLite file in WAL mode, written through on every transition.

Records are stored as msgspec-encoded JSON next to their key, so the schema stays small
and a PostgreSQL store can mirror it table for table. Every write is one
``BEGIN IMMEDIATE`` transaction with ``synchronous=FULL``: once ``apply_all`` returns,
the change survives a SIGKILL (and a power cut). Writes come from one thread (the
journal's); history reads use a connection of their own, so they never wait for it.

A write that fails raises ``StoreUnavailable`` and leaves the file as it was. If the
database or its log is deleted or replaced under the server, the store refuses every
later write (``permanent``), first saving what it still can: the committed log is
checkpointed into the database file if that file is intact, and a copy of the whole
state is written next to it (``<db>.rescued-<time>``).
"""

from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

import msgspec

from forewarn.fabric import (
    Changes,
    EventRecord,
    HistoryEntry,
    OperationRecord,
    RolloutRecord,
    ScopeState,
    Snapshot,
    StoreUnavailable,
)
from forewarn.rehearsal.facts import ReactionData, VmPolls
from forewarn.store import reaction_tables as rx
from forewarn.store.fileguard import FileGuard, FileReplaced

__all__ = ["SCHEMA_VERSION", "SQLiteStore", "StoreError"]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1

#: What ``forewarn fleet reset`` empties.
_RESET_TABLES = ("operations", "events", "rollouts", "deleted_vms")
_TABLES = ("meta", "operations", "events", "rollouts", "scopes", "deleted_vms", "history")

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE operations (id TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE events (id TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE rollouts (id TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE scopes (id TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE deleted_vms (name TEXT PRIMARY KEY);
CREATE TABLE history (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    scope_id TEXT,
    operation_id TEXT,
    event_id TEXT,
    detail BLOB NOT NULL
);
CREATE INDEX history_event ON history (event_id);
CREATE INDEX history_operation ON history (operation_id);
"""

T = TypeVar("T")

_REACTION_UPSERTS = rx.upsert_sql("sqlite")
_REACTION_SELECTS = rx.select_sql("sqlite")


class StoreError(Exception):
    """The database cannot be used (wrong schema, damaged, unreadable, in use)."""


def _upsert(table: str) -> str:
    return (
        f"INSERT INTO {table} (id, data) VALUES (?, ?) "
        "ON CONFLICT(id) DO UPDATE SET data = excluded.data"
    )


def _set_meta(db: sqlite3.Connection, key: str, value: str) -> None:
    db.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def _connect(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("PRAGMA busy_timeout=5000")
    return db


class SQLiteStore:
    """A ``forewarn.fabric.Store`` on one SQLite file (or ``:memory:`` for tests)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._memory = self.path == ":memory:" or self.path.startswith("file:")
        if not self._memory:
            folder = os.path.dirname(os.path.abspath(self.path))
            if not os.path.isdir(folder):
                raise StoreError(
                    f"cannot open database {self.path}: directory {folder} does not exist"
                )
        self._lock = _exclusive_lock(self.path)
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._broken: StoreUnavailable | None = None
        try:
            self._db = _connect(self.path)
            self._prepare()
            self._reader = self._db if self._memory else _connect(self.path)
        except sqlite3.DatabaseError as exc:
            self._release_lock()
            raise StoreError(f"cannot open database {self.path}: {exc}") from None
        except StoreError:
            self._release_lock()
            raise
        self._guard = None if self._memory else FileGuard(self.path)

    # ---------------------------------------------------------------- opening

    def _prepare(self) -> None:
        """Create a new database, or check that an existing one is whole."""
        tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master")}
        if not tables:
            self._db.executescript("BEGIN;" + _SCHEMA + rx.SQLITE_SCHEMA + "COMMIT;")
            _set_meta(self._db, "schema", str(SCHEMA_VERSION))
            return
        missing = [t for t in _TABLES if t not in tables]
        if "meta" in missing:
            raise StoreError(f"{self.path} is not a forewarn database (it has no meta table)")
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is None or not row[0].isdigit():
            raise StoreError(f"database {self.path} has no schema version; it is damaged")
        if int(row[0]) != SCHEMA_VERSION:
            raise StoreError(
                f"database {self.path} has schema {row[0]}, this forewarn needs {SCHEMA_VERSION}"
            )
        if missing:
            raise StoreError(
                f"database {self.path} is damaged: table {', '.join(missing)} is missing; "
                "restore it from a backup or start a new database"
            )
        problems = [r[0] for r in self._db.execute("PRAGMA quick_check(5)")]
        if problems != ["ok"]:
            raise StoreError(f"database {self.path} is damaged: {'; '.join(problems)}")
        if any(t not in tables for t in rx.REACTION_TABLES):  # made by an older forewarn
            self._db.executescript("BEGIN;" + rx.SQLITE_SCHEMA + "COMMIT;")

    def _rows(self, table: str, kind: type[T]) -> list[T]:
        rows = self._db.execute(f"SELECT rowid, data FROM {table} ORDER BY rowid").fetchall()
        out = []
        for rowid, data in rows:
            try:
                out.append(msgspec.json.decode(data, type=kind))
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                raise StoreError(
                    f"database {self.path} is damaged: row {rowid} of table {table} "
                    f"cannot be read ({exc})"
                ) from None
        return out

    def load(self) -> Snapshot:
        """Everything the engine needs to resume."""
        return Snapshot(
            operations=self._rows("operations", OperationRecord),
            events=self._rows("events", EventRecord),
            rollouts=self._rows("rollouts", RolloutRecord),
            scopes=self._rows("scopes", ScopeState),
            deleted_vms=[r[0] for r in self._db.execute("SELECT name FROM deleted_vms")],
        )

    # ----------------------------------------------------------------- writing

    def apply(self, changes: Changes) -> None:
        """Write ``changes`` in one transaction (an empty one is a probe)."""
        self.apply_all([changes])

    def apply_all(self, batch: Sequence[Changes]) -> None:
        """Write several changes, in order, in one transaction (group commit)."""
        with self._write_lock:
            if self._broken is not None:
                raise self._broken
            self._check_files()
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
                for changes in batch:
                    self._write(db, changes)
                if all(c.empty() for c in batch):
                    _set_meta(db, "heartbeat", repr(time.time()))  # a probe must touch disk
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._rollback()
                raise StoreUnavailable(f"cannot write database {self.path}: {exc}") from None
            except BaseException:
                self._rollback()
                raise
            self._check_files()

    def _rollback(self) -> None:
        try:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
        except sqlite3.Error as exc:  # the failed write already undid it
            log.warning("rollback after a failed write: %s", exc)

    @staticmethod
    def _write(db: sqlite3.Connection, changes: Changes) -> None:
        enc = msgspec.json.encode
        if changes.reset:  # forewarn fleet reset: history and scope counters stay
            for table in _RESET_TABLES:
                db.execute(f"DELETE FROM {table}")
        db.executemany(_upsert("operations"), _pairs(changes.operations, enc))
        db.executemany(_upsert("events"), _pairs(changes.events, enc))
        db.executemany("DELETE FROM events WHERE id = ?", [(i,) for i in changes.removed_events])
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
        if changes.clock_position is not None:
            _set_meta(db, "clock", repr(changes.clock_position))

    def _check_files(self) -> None:
        """Refuse to write into files that are no longer the database on disk."""
        if self._guard is None:
            return
        try:
            self._guard.check()
        except FileReplaced as exc:
            saved = self._save_what_remains()
            self._broken = StoreUnavailable(
                f"{exc}; refusing every write from now on ({saved}); "
                "restart the server to continue",
                permanent=True,
            )
            log.error("%s", self._broken)
            raise self._broken from None

    def _save_what_remains(self) -> str:
        """Keep committed state that only the open files still hold."""
        notes = []
        assert self._guard is not None
        if os.path.exists(self.path) and not self._guard.wal_intact():
            try:  # the database file is ours: move the log's commits into it
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                notes.append(f"committed changes were checkpointed into {self.path}")
            except sqlite3.Error as exc:
                notes.append(f"checkpoint failed: {exc}")
        rescue = f"{self.path}.rescued-{int(time.time())}"
        try:
            self._db.execute("VACUUM INTO ?", (rescue,))
            notes.append(f"a copy of the state is in {rescue}")
        except sqlite3.Error as exc:
            notes.append(f"no rescue copy could be written: {exc}")
        return "; ".join(notes)

    # --------------------------------------------------------------- reactions

    def save_reactions(self, data: ReactionData) -> None:
        """Merge reaction facts into the reaction tables, in one transaction."""
        sql = _REACTION_UPSERTS
        with self._write_lock:
            if self._broken is not None:
                raise self._broken
            self._check_files()
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
                db.executemany(sql["events"], rx.event_rows(data))
                db.executemany(sql["vms"], rx.vm_rows(data))
                db.executemany(sql["polls"], rx.poll_rows(data))
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._rollback()
                raise StoreUnavailable(f"cannot write database {self.path}: {exc}") from None
            except BaseException:
                self._rollback()
                raise

    def reactions(self, since: float | None = None) -> ReactionData:
        """Events created at or after ``since``, the reactions to them, every VM's polls."""
        sql = _REACTION_SELECTS
        with self._read_lock:
            events = self._reader.execute(sql["events"], (since, since)).fetchall()
            vms = self._reader.execute(sql["vms"], (since, since)).fetchall()
            polls = self._reader.execute(sql["polls"]).fetchall()
        return ReactionData(
            events=rx.events_from_rows(events),
            vms=rx.vms_from_rows(vms),
            polls=rx.polls_from_rows(polls),
        )

    def polls(self) -> list[VmPolls]:
        """Every VM's first and last poll."""
        with self._read_lock:
            rows = self._reader.execute(_REACTION_SELECTS["polls"]).fetchall()
        return rx.polls_from_rows(rows)

    # ------------------------------------------------------------------- reads

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
        with self._read_lock:
            rows = self._reader.execute(sql, args).fetchall()
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
            for seq, at, kind, scope, op, ev, detail in rows
        ]
        return entries[::-1] if newest else entries

    def _meta(self, key: str) -> str | None:
        with self._read_lock:
            row = self._reader.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _decoded_meta(self, key: str, what: str) -> Any:
        raw = self._meta(key)
        if raw is None:
            return None
        try:
            return msgspec.json.decode(raw)
        except msgspec.DecodeError as exc:
            raise StoreError(
                f"database {self.path} is damaged: {what} cannot be read ({exc})"
            ) from None

    def _save_meta(self, key: str, value: str) -> None:
        with self._write_lock:
            try:
                _set_meta(self._db, key, value)
            except sqlite3.Error as exc:
                raise StoreUnavailable(f"cannot write database {self.path}: {exc}") from None

    def stored_fleet(self) -> dict[str, Any] | None:
        """The fleet this database was created with."""
        fleet = self._decoded_meta("fleet", "the stored fleet")
        if fleet is not None and not isinstance(fleet, dict):
            raise StoreError(f"database {self.path} is damaged: the stored fleet is not a mapping")
        return fleet

    def save_fleet(self, fleet: dict[str, Any]) -> None:
        """Remember the fleet (kept across restarts, so ``--fleet`` can be omitted)."""
        self._save_meta("fleet", msgspec.json.encode(fleet).decode())

    def stored_settings(self) -> dict[str, Any]:
        """Server settings remembered with the fleet (clock kind, time scale)."""
        settings = self._decoded_meta("settings", "the stored settings")
        return settings if isinstance(settings, dict) else {}

    def save_settings(self, settings: dict[str, Any]) -> None:
        """Remember server settings that a restart with only ``--db`` must keep."""
        self._save_meta("settings", msgspec.json.encode(settings).decode())

    def clock_position(self) -> float | None:
        """The last saved position of a virtual clock."""
        raw = self._meta("clock")
        if raw is None:
            return None
        try:
            return float(raw)
        except ValueError:
            raise StoreError(f"database {self.path} is damaged: clock position {raw!r}") from None

    def save_clock_position(self, position: float) -> None:
        """Save a virtual clock's position (durably, before anyone sees the new time)."""
        self._save_meta("clock", repr(position))

    def close(self) -> None:
        """Close the connections and let another server open the database."""
        if self._reader is not self._db:
            self._reader.close()
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
    try:
        lock = open(f"{real}.lock", "ab")  # noqa: SIM115 - held open for the store's lifetime
    except OSError as exc:
        raise StoreError(f"cannot open database {path}: {exc.strerror}") from None
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
