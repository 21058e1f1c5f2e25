"""A marker beside the SQLite file (``<db>.id``): a database was here.

Without it, a server restarted on a ``--db`` that was deleted (by a clean-up script, a
mistaken ``rm``) would quietly start an empty database, and the fleet's operations would
be gone without a word. The marker holds the database's id (also kept in its ``meta``
table) and outlives the file: a start that finds the marker but not the database is
refused, with the rescue copy to restore when the store made one. Starting afresh there
is a deliberate act (``--new-db``, or deleting the marker).
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import re

from forewarn.store.errors import StoreError

__all__ = ["marker_path", "refuse_missing", "write_marker"]

log = logging.getLogger(__name__)

_RESCUED = re.compile(r"\.rescued-(\d+)$")


def marker_path(db: str) -> str:
    """Where the marker of database ``db`` is kept."""
    return f"{db}.id"


def _newest_rescue(db: str) -> str | None:
    """The latest ``<db>.rescued-<time>`` copy beside ``db``."""
    copies: list[tuple[int, str]] = []
    for path in glob.glob(f"{glob.escape(db)}.rescued-*"):
        match = _RESCUED.search(path)
        if match is not None:
            copies.append((int(match[1]), path))
    return max(copies)[1] if copies else None


def refuse_missing(db: str, *, new_db: bool) -> None:
    """Raise ``StoreError`` when ``db`` is gone but its marker says it existed (unless
    ``new_db``), or when ``new_db`` is asked for where a database exists."""
    if os.path.exists(db):
        if new_db:
            raise StoreError(
                f"--new-db starts a new database where one is missing, but {db} exists; "
                "serve it without --new-db, or move it aside first"
            )
        return
    if new_db or not os.path.exists(marker_path(db)):
        return
    rescue = _newest_rescue(db)
    restore = (
        f"restore the rescue copy written when it went (mv {rescue} {db}) or a backup"
        if rescue is not None
        else "restore it from a backup"
    )
    raise StoreError(
        f"database {db} is missing, but {marker_path(db)} says one was created here; "
        f"{restore}; to start a new, empty database instead, pass --new-db"
    )


def write_marker(db: str, db_id: str) -> None:
    """Record that database ``db_id`` lives at ``db`` (atomically; best effort: a marker
    that cannot be written costs only this protection, never a start)."""
    path = marker_path(db)
    text = f"{db_id}\n"
    with contextlib.suppress(OSError), open(path, encoding="utf-8") as existing:
        if existing.read() == text:
            return
    temporary = f"{path}.tmp-{os.getpid()}"
    try:
        with open(temporary, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        log.warning("cannot write %s (%s): a deleted %s would not be noticed", path, exc, db)
