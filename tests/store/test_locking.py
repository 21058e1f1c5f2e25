"""One server per database, and a failed write leaves the database usable."""

from __future__ import annotations

from pathlib import Path

import pytest

from forewarn.fabric import Changes, HistoryEntry
from forewarn.store import SQLiteStore, StoreError


def test_a_database_in_use_cannot_be_opened_twice(tmp_path: Path) -> None:
    path = tmp_path / "f.db"
    first = SQLiteStore(path)
    with pytest.raises(StoreError, match="in use by another forewarn server"):
        SQLiteStore(path)
    first.close()
    SQLiteStore(path).close()  # free again once the first server is gone


def test_a_failed_write_is_rolled_back_and_the_next_one_works(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "f.db")
    bad = Changes(history=[HistoryEntry(at=1.0, kind="x", detail={"oops": object()})])
    with pytest.raises(TypeError):
        store.apply(bad)
    store.apply(Changes(history=[HistoryEntry(at=2.0, kind="fine")]))
    assert [h.kind for h in store.history()] == ["fine"]
    store.close()


def test_a_symlink_to_a_database_in_use_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "f.db"
    first = SQLiteStore(path)
    link = tmp_path / "link.db"
    link.symlink_to(path)
    with pytest.raises(StoreError, match="in use"):
        SQLiteStore(link)
    first.close()
