"""Store faults made for real: a full disk, a read-only file system, deleted files.

The promise: a change that cannot be written is not made (the caller gets
``StoreUnavailable`` and everything observable stays as it was), readers keep the last
committed state, the fabric recovers by itself when the disk does, and nothing that was
committed is ever lost.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from forewarn.fabric import Clock, Fabric, StoreUnavailable
from forewarn.store import SQLiteStore, StoreError
from tests.support.fabrics import MINUTE, T0, make_fabric, observable, submit
from tests.support.faults import SmallDisk, small_disk


@pytest.fixture
def disk() -> Iterator[SmallDisk]:
    with small_disk() as mounted:
        yield mounted


def _open(path: Path, clock: Clock) -> tuple[SQLiteStore, Fabric]:
    store = SQLiteStore(path)
    return store, make_fabric(store=store, clock=clock, enablement="always")


def _operation_ids(path: Path) -> list[str]:
    """What is on disk, read by a connection of its own."""
    with sqlite3.connect(path) as db:
        return [r[0] for r in db.execute("SELECT id FROM operations ORDER BY rowid")]


def test_a_full_disk_refuses_changes_keeps_reads_and_recovers(disk: SmallDisk) -> None:
    clock = Clock.virtual(start=T0)
    store, fabric = _open(disk.root / "f.db", clock)
    acknowledged = [submit(fabric, "user-reboot", n).id for n in ("web-0", "web-1")]
    disk.fill()
    before = observable(fabric)
    with pytest.raises(StoreUnavailable, match="full"):
        # A few writes may still fit in pages SQLite already has; one soon does not.
        for name in ("web-2", "web-3", "web-4", "web-5", "jumpbox", "FrontEnd_IN_0"):
            acknowledged.append(submit(fabric, "user-reboot", name).id)
            before = observable(fabric)
    # The failed change is not there, and nothing else moved: readers get what was written.
    assert observable(fabric) == before
    assert "full" in str(fabric.store_error())
    # Timers that come due wait for the disk instead of failing the reader that finds them.
    clock.jump(16 * MINUTE)
    assert fabric.view("web") == before["views"]["web"]
    disk.free()
    clock.jump(2)  # past the retry pause
    fabric.probe_store()
    assert fabric.store_error() is None
    assert fabric.run_due() > 0  # the timers that waited fire now
    acknowledged.append(submit(fabric, "user-reboot", "BackEnd_IN_0").id)
    store.close()
    assert _operation_ids(disk.root / "f.db") == acknowledged


def test_a_database_on_a_read_only_disk_is_refused_with_a_clear_error(disk: SmallDisk) -> None:
    clock = Clock.virtual(start=T0)
    store, fabric = _open(disk.root / "r.db", clock)
    submit(fabric, "user-reboot", "web-0")
    store.close()
    disk.read_only(True)
    with pytest.raises(StoreError, match=r"cannot open database .*r\.db: Read-only file system"):
        SQLiteStore(disk.root / "r.db")


def test_deleting_the_database_refuses_writes_and_rescues_the_state(tmp_path: Path) -> None:
    clock = Clock.virtual(start=T0)
    path = tmp_path / "d.db"
    store, fabric = _open(path, clock)
    acknowledged = [submit(fabric, "user-reboot", n).id for n in ("web-0", "web-1")]
    for suffix in ("", "-wal", "-shm"):
        os.unlink(f"{path}{suffix}")
    before = observable(fabric)
    with pytest.raises(StoreUnavailable, match=r"d\.db was deleted") as raised:
        submit(fabric, "user-reboot", "web-2")
    assert raised.value.permanent
    assert observable(fabric) == before
    with pytest.raises(StoreUnavailable, match="deleted"):  # and every later write
        submit(fabric, "user-reboot", "web-3")
    assert "deleted" in str(fabric.store_error())
    rescued = sorted(tmp_path.glob("d.db.rescued-*"))
    assert len(rescued) == 1
    assert _operation_ids(rescued[0]) == acknowledged
    store.close()


def test_deleting_the_log_keeps_every_acknowledged_change_in_the_database(
    tmp_path: Path,
) -> None:
    clock = Clock.virtual(start=T0)
    path = tmp_path / "w.db"
    store, fabric = _open(path, clock)
    acknowledged = [submit(fabric, "user-reboot", n).id for n in ("web-0", "web-1", "web-2")]
    os.unlink(f"{path}-wal")
    with pytest.raises(StoreUnavailable, match=r"write-ahead log .* was deleted"):
        submit(fabric, "user-reboot", "web-3")
    # Without closing anything (as after a SIGKILL), the database file already holds them.
    assert _operation_ids(path) == acknowledged
    store.close()
    reopened = SQLiteStore(path)
    assert [o.id for o in reopened.load().operations] == acknowledged
    reopened.close()
