"""Pages of the SQLite file overwritten while the server runs (real bytes, ``os.pwrite``).

The promise: the damage is found (by a write or read SQLite calls malformed, or by the
page check the server runs every few seconds), no change is acknowledged from then on
(503), ``/healthz`` says why, and every change acknowledged before is in a rescue copy
the log names, with how to put it back; the restored copy serves them.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from forewarn.fabric import Clock, StoreUnavailable
from forewarn.store import SQLiteStore
from tests.support.fabrics import T0, make_fabric, submit
from tests.support.serverproc import ServerProcess

ARGS = ("--clock", "virtual", "--enablement", "always", "--rate-limit", "0")


def _damage_table(db: Path, table: str) -> None:
    """Overwrite the first bytes of ``table``'s root page in the database file."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as reader:
        page_size = reader.execute("PRAGMA page_size").fetchone()[0]
        root = reader.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)
        ).fetchone()[0]
    fd = os.open(db, os.O_RDWR)
    try:
        os.pwrite(fd, b"\xa5" * 64, (root - 1) * page_size)
        os.fsync(fd)
    finally:
        os.close(fd)


def _reboot(server: ServerProcess, vm: str) -> int:
    body = {"kind": "user-reboot", "target": vm}
    return server.control("POST", "/api/v1/operations", json=body).status_code


def _operation_ids(server: ServerProcess) -> list[str]:
    response = server.control("GET", "/api/v1/operations")
    assert response.status_code == 200, response.text
    return sorted(op["id"] for op in response.json())


def test_pages_damaged_under_a_running_server_stop_writes_and_keep_what_was_acknowledged(
    start_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    db = tmp_path / "forewarn.db"
    first = start_server(ARGS, db=db)
    assert _reboot(first, "web-0") == 201
    first.stop()  # the database file now holds everything (the log is checkpointed)
    server = start_server(ARGS, db=db)
    assert _reboot(server, "web-1") == 201
    acknowledged = _operation_ids(server)
    assert len(acknowledged) == 2
    _damage_table(db, "deleted_vms")  # a table no write touches: only a check finds it
    deadline = time.monotonic() + 30
    while (health := server.control("GET", "/healthz")).status_code == 200:
        assert time.monotonic() < deadline, "the damage went unnoticed"
        time.sleep(0.2)
    assert health.status_code == 503
    assert "damaged" in health.json()["reason"]
    refused = server.control(
        "POST", "/api/v1/operations", json={"kind": "user-reboot", "target": "web-2"}
    )
    assert refused.status_code == 503, refused.text
    assert "damaged" in refused.text
    assert _operation_ids(server) == acknowledged  # readers keep what was acknowledged
    rescued = sorted(tmp_path.glob("forewarn.db.rescued-*"))
    assert len(rescued) == 1
    logged = "\n".join(server.banner)
    assert f"mv {rescued[0]} {db}" in logged, logged  # how to restore, in the log
    server.kill(signal.SIGTERM)
    # Follow the log's advice: the damaged file aside, the rescue copy in its place.
    os.rename(db, tmp_path / "forewarn.db.damaged")
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"forewarn.db{suffix}").unlink(missing_ok=True)
    os.rename(rescued[0], db)
    restored = start_server(ARGS, db=db)
    assert _operation_ids(restored) == acknowledged
    assert _reboot(restored, "web-2") == 201


def test_the_page_check_finds_a_damaged_table_and_the_store_refuses_writes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "w.db"
    store = SQLiteStore(path)
    submit(make_fabric(store=store, clock=Clock.virtual(start=T0)), "user-reboot", "web-0")
    store.close()  # the pages are in the database file now
    store = SQLiteStore(path)
    fabric = make_fabric(store=store, clock=Clock.virtual(start=T0), enablement="always")
    assert store.check_pages() is None
    _damage_table(path, "operations")
    found = store.check_pages()
    assert found is not None and found.permanent
    assert "to restore" in str(found)
    with pytest.raises(StoreUnavailable, match=r"w\.db is damaged"):
        submit(fabric, "user-reboot", "web-1")
    store.close()
    (rescued,) = tmp_path.glob("w.db.rescued-*")
    copy = SQLiteStore(rescued)  # a whole database, whatever it could save
    saved = copy.load().operations
    copy.close()
    if "a copy of the whole state" in str(found):  # read through the writer's cached pages
        assert [op.vms for op in saved] == [("web-0",)]
    else:  # what the copy lacks is said, not hidden
        assert "rows lost in operations" in str(found)
