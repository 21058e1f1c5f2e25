"""Notices when the database's files are deleted or replaced under a running server.

SQLite keeps writing to a file it has open even after it was unlinked: every change
acknowledged from then on would vanish at the next restart. The guard compares the
identity (device, inode) of the database and its write-ahead log with what they were
when the store opened them, before and after every write.
"""

from __future__ import annotations

import os

__all__ = ["FileGuard", "FileReplaced"]


class FileReplaced(Exception):
    """The database or its log is no longer the file the store opened; says which."""


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino)


class FileGuard:
    """The identity of ``path`` and ``path-wal`` as the store first saw them."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._wal_path = f"{path}-wal"
        self._db = _identity(path)
        self._wal = _identity(self._wal_path)

    def check(self) -> None:
        """Raise ``FileReplaced`` if either file vanished or is another file now."""
        db = _identity(self.path)
        if db != self._db:
            what = "deleted" if db is None else "replaced"
            raise FileReplaced(f"database file {self.path} was {what} while the server ran")
        wal = _identity(self._wal_path)
        if self._wal is None:
            self._wal = wal  # the log appears with the first write
        elif wal != self._wal:
            what = "deleted" if wal is None else "replaced"
            raise FileReplaced(f"write-ahead log {self._wal_path} was {what} while the server ran")

    def wal_intact(self) -> bool:
        """True while the log is the file the store opened (it may still be absent)."""
        return self._wal is None or _identity(self._wal_path) == self._wal
