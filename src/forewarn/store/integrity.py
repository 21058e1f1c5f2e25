"""Damaged pages in the SQLite file: finding them while the server runs, and saving what
can still be read.

A page overwritten under a running server (a disk that returns garbage, another program
writing into the file) is otherwise found only at the next start, when the database no
longer opens, with every change acknowledged since inside it. ``find_damage`` runs
SQLite's ``quick_check`` on a connection of its own (fresh each time: a long-lived one
may answer from pages it cached before the damage). ``rescue_copy`` writes what the
damaged file still holds into a new database: the whole file when SQLite can read it all
(``VACUUM INTO``), else table by table, every row it can reach.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3

from forewarn.store.schema import SQLITE_SCHEMA, add_sqlite_columns

__all__ = ["find_damage", "is_damage", "rescue_copy", "restore_hint"]

#: Problems ``quick_check`` lists at most (the first few say enough).
_MAX_PROBLEMS = 5


def is_damage(exc: sqlite3.Error) -> bool:
    """True for SQLite's errors that mean a damaged file (not a full disk, not a lock)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
    text = str(exc)
    return "malformed" in text or "not a database" in text


def find_damage(path: str) -> str | None:
    """What ``quick_check`` finds wrong in the database at ``path`` (None: nothing)."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        return None if not is_damage(exc) else str(exc)
    try:
        db.execute("PRAGMA busy_timeout=5000")
        problems = [str(r[0]) for r in db.execute(f"PRAGMA quick_check({_MAX_PROBLEMS})")]
    except sqlite3.Error as exc:
        return str(exc) if is_damage(exc) else None
    finally:
        db.close()
    return None if problems == ["ok"] else "; ".join(problems)


def rescue_copy(db: sqlite3.Connection, target: str) -> str:
    """Copy what ``db`` can still read into a new database at ``target``; says how much."""
    try:
        db.execute("VACUUM INTO ?", (target,))
        return f"a copy of the whole state is in {target}"
    except sqlite3.Error:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(target)  # a half-written copy
    out = sqlite3.connect(target, isolation_level=None)
    lost: list[str] = []
    try:
        out.executescript("BEGIN;" + SQLITE_SCHEMA + "COMMIT;")
        add_sqlite_columns(out)
        tables = [r[0] for r in out.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        out.execute("BEGIN")
        for table in tables:
            if table.startswith("sqlite_"):
                continue
            if not _copy_rows(db, out, table):
                lost.append(table)
        out.execute("COMMIT")
    finally:
        out.close()
    if not lost:
        return f"a copy of every row is in {target}"
    unreadable = ", ".join(lost)
    return f"a copy of every row still readable is in {target} (rows lost in {unreadable})"


def _copy_rows(db: sqlite3.Connection, out: sqlite3.Connection, table: str) -> bool:
    """Copy ``table``'s rows in rowid order, up to the first it cannot read; True if all."""
    columns = [r[1] for r in out.execute(f'PRAGMA table_info("{table}")')]
    names = ", ".join(f'"{c}"' for c in columns)
    insert = f'INSERT OR IGNORE INTO "{table}" ({names}) VALUES ({", ".join("?" * len(columns))})'
    try:
        for row in db.execute(f'SELECT {names} FROM "{table}" ORDER BY rowid'):
            out.execute(insert, row)
    except sqlite3.Error:
        return False
    return True


def restore_hint(path: str, rescue: str) -> str:
    """How an operator puts the rescue copy in place of the damaged database."""
    return (
        f"to restore: stop the server, keep the damaged file aside "
        f"(mv {path} {path}.damaged; rm -f {path}-wal {path}-shm), "
        f"then mv {rescue} {path} and start the server again"
    )
