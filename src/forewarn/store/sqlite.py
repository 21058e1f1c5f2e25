"""The embedded store: one SQLite file in WAL mode, written through on every transition.

Records are stored as msgspec-encoded JSON next to their key, in the tables of the
PostgreSQL store's migrations put into SQLite's words (``forewarn.store.schema``); what
both stores do alike is ``SqlStore``'s and ``platform_tables``'. Every write is one
``BEGIN IMMEDIATE`` transaction with ``synchronous=FULL``: once ``apply_all`` returns,
the change survives a SIGKILL (and a power cut). Writes come from one thread (the
journal's); history reads use a connection of their own, so they never wait for it.

A write that fails raises ``StoreUnavailable`` and leaves the file as it was. If the
database or its log is deleted or replaced under the server, the store refuses every
later write (``permanent``), first saving what it still can: the committed log is
checkpointed into the database file if that file is intact, and a copy of the whole
state is written next to it (``<db>.rescued-<time>``). Damaged pages (found by a write
or read that SQLite calls "malformed", or by ``check_pages``, which the server runs every
few seconds) are handled alike: every later write is refused, and what the file still
holds is copied out (``forewarn.store.integrity``), with the log saying how to restore it.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from forewarn.fabric import (
    Changes,
    Snapshot,
    StoreUnavailable,
)
from forewarn.store import reaction_tables as rx
from forewarn.store.errors import StoreError
from forewarn.store.fileguard import FileGuard, FileReplaced
from forewarn.store.integrity import find_damage, is_damage, rescue_copy, restore_hint
from forewarn.store.marker import refuse_missing, write_marker
from forewarn.store.platform_tables import (
    Rows,
    change_statements,
    load_snapshot,
    meta_upsert_sql,
)
from forewarn.store.schema import SQLITE_SCHEMA, add_sqlite_columns
from forewarn.store.sql_store import Query, SqlStore

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1

_TABLES = ("meta", "operations", "events", "rollouts", "scopes", "deleted_vms", "history")
#: Tables of later migrations: a database of an older forewarn lacks them (made at open).
_LATER_TABLES = (*rx.REACTION_TABLES, "eventgrid_subscriptions", "eventgrid_pending", "outbox")
#: Indexes of later migrations on earlier tables (likewise made at open).
_LATER_INDEXES = ("history_kind",)


def _set_meta(db: sqlite3.Connection, key: str, value: str) -> None:
    db.execute(meta_upsert_sql("sqlite"), (key, value))


def _connect(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("PRAGMA busy_timeout=5000")
    return db


class SQLiteStore(SqlStore):
    """A ``forewarn.fabric.Store`` on one SQLite file (or ``:memory:`` for tests).

    A file whose marker (``<db>.id``) outlived it is not silently made anew: that takes
    ``new_db`` (``forewarn.store.marker``)."""

    dialect = "sqlite"

    def __init__(self, path: str | Path, *, new_db: bool = False) -> None:
        self.path = self.where = str(path)
        self._memory = self.path == ":memory:" or self.path.startswith("file:")
        if not self._memory:
            folder = os.path.dirname(os.path.abspath(self.path))
            if not os.path.isdir(folder):
                raise StoreError(
                    f"cannot open database {self.path}: directory {folder} does not exist"
                )
        self._lock = _exclusive_lock(self.path)
        if not self._memory:
            try:
                refuse_missing(self.path, new_db=new_db)
            except StoreError:
                self._release_lock()
                raise
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
        if not self._memory:
            write_marker(self.path, self._identity())

    # ---------------------------------------------------------------- opening

    def _prepare(self) -> None:
        """Create a new database, or check that an existing one is whole."""
        tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master")}
        if not tables:
            self._db.executescript("BEGIN;" + SQLITE_SCHEMA + "COMMIT;")
            add_sqlite_columns(self._db)
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
        if any(t not in tables for t in (*_LATER_TABLES, *_LATER_INDEXES)):  # an older forewarn's
            self._db.executescript("BEGIN;" + SQLITE_SCHEMA + "COMMIT;")
        add_sqlite_columns(self._db)  # columns an older forewarn's tables lack

    def _identity(self) -> str:
        """This database's id (kept in ``meta``; given to a database made before ids)."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'id'").fetchone()
        if row is not None:
            return str(row[0])
        db_id = uuid.uuid4().hex
        _set_meta(self._db, "id", db_id)
        return db_id

    def load(self) -> Snapshot:
        """Everything the engine needs to resume."""
        return load_snapshot(self._db.execute, key="rowid", order="rowid", where=self.path)

    # ----------------------------------------------------------------- writing

    def apply_all(self, batch: Sequence[Changes]) -> None:
        """Write several changes, in order, in one transaction (group commit)."""
        probe = all(c.empty() for c in batch)  # a probe must touch the disk
        self._write_together(change_statements(batch, "sqlite"), probe=probe)

    def _write_together(self, statements: Rows, *, probe: bool = False) -> None:
        """Run ``statements`` in one ``BEGIN IMMEDIATE`` transaction: all or nothing
        (``StoreUnavailable``); a ``probe`` writes a heartbeat, so that it touches disk."""
        with self._write_lock:
            if self._broken is not None:
                raise self._broken
            self._check_files()
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
                for sql, rows in statements:
                    db.executemany(sql, rows)
                if probe:
                    _set_meta(db, "heartbeat", repr(time.time()))
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._rollback()
                if is_damage(exc):
                    raise self._damaged(str(exc)) from None
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
        notes.append(self._rescue()[1])
        return "; ".join(notes)

    def _rescue(self) -> tuple[str | None, str]:
        """Copy what the open database still holds beside it: the copy's path (None when
        none could be written) and a note saying what it holds."""
        rescue = f"{self.path}.rescued-{int(time.time())}"
        try:
            return rescue, rescue_copy(self._db, rescue)
        except sqlite3.Error as exc:
            return None, f"no rescue copy could be written: {exc}"

    # ------------------------------------------------------------------ damage

    def check_pages(self) -> StoreUnavailable | None:
        """Look for damaged pages (SQLite's ``quick_check``, off the writer's connection);
        once any is found, every later write is refused (the error says why and how to
        restore). Returns that error, or None while the file is whole."""
        if self._memory or self._broken is not None:
            return self._broken
        damage = find_damage(self.path)
        if damage is None:
            return None
        with self._write_lock:
            return self._damaged(damage)

    def _damaged(self, what: str) -> StoreUnavailable:
        """Refuse every write from now on, keeping a copy of what can still be read."""
        if self._broken is not None:
            return self._broken
        rescue, note = self._rescue()
        hint = "" if rescue is None else f"; {restore_hint(self.path, rescue)}"
        self._broken = StoreUnavailable(
            f"database {self.path} is damaged ({what}); refusing every write from now on; "
            f"{note}{hint}",
            permanent=True,
        )
        log.error("%s", self._broken)
        return self._broken

    # ------------------------------------------------------------------- reads

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._read_together([(sql, args)])[0]

    def _read_together(self, queries: Sequence[Query]) -> list[list[tuple[Any, ...]]]:
        try:
            with self._read_lock:
                return [self._reader.execute(sql, args).fetchall() for sql, args in queries]
        except sqlite3.Error as exc:
            if not is_damage(exc):
                raise
            with self._write_lock:
                raise self._damaged(str(exc)) from None

    def _write(self, sql: str, args: Sequence[Any]) -> None:
        with self._write_lock:
            try:
                self._db.execute(sql, args)
            except sqlite3.Error as exc:
                raise StoreUnavailable(f"cannot write database {self.path}: {exc}") from None

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
