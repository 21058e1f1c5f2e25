"""A ``--db`` deleted while the server runs, then a restart on it (real files, real
processes).

The promise: the restart does not silently start an empty database where one was; it is
refused in one line that names the rescue copy and how to restore it, and how to start
afresh deliberately (``--new-db``). Restoring as told serves every acknowledged change.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from forewarn.store import SQLiteStore, StoreError
from tests.support.serverproc import ServerProcess, free_port

ARGS = ("--clock", "virtual", "--enablement", "always", "--rate-limit", "0")


def _serve_once(db: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``forewarn serve`` expected to refuse at start-up."""
    command = [
        sys.executable, "-m", "forewarn", "serve", "--db", str(db), *ARGS, *extra,
        "--imds-bind", f"127.0.0.1:{free_port()}", "--control-bind", f"127.0.0.1:{free_port()}",
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def _operations(server: ServerProcess) -> list[str]:
    response = server.control("GET", "/api/v1/operations")
    assert response.status_code == 200, response.text
    return sorted(op["id"] for op in response.json())


def test_a_deleted_database_is_not_replaced_by_an_empty_one_at_restart(
    start_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    db = tmp_path / "forewarn.db"
    server = start_server(ARGS, db=db)
    body = {"kind": "user-reboot", "target": "web-0"}
    assert server.control("POST", "/api/v1/operations", json=body).status_code == 201
    acknowledged = _operations(server)
    for suffix in ("", "-wal", "-shm"):
        os.unlink(f"{db}{suffix}")
    body = {"kind": "user-reboot", "target": "web-1"}
    refused = server.control("POST", "/api/v1/operations", json=body)
    assert refused.status_code == 503 and "deleted" in refused.text
    server.stop()
    (rescue,) = tmp_path.glob("forewarn.db.rescued-*")

    restart = _serve_once(db)
    assert restart.returncode != 0
    lines = restart.stderr.strip().splitlines()
    assert len(lines) == 1, restart.stderr  # one line, no traceback
    assert f"database {db} is missing" in lines[0]
    assert f"mv {rescue} {db}" in lines[0]
    assert "--new-db" in lines[0]
    assert not db.exists()  # nothing was created

    os.rename(rescue, db)  # as the line says
    restored = start_server(ARGS, db=db)
    assert _operations(restored) == acknowledged


def test_new_db_starts_afresh_deliberately_and_only_where_the_database_is_missing(
    start_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    db = tmp_path / "f.db"
    SQLiteStore(db).close()
    assert (tmp_path / "f.db.id").read_text().strip()
    refused = _serve_once(db, "--new-db")  # a database is there: --new-db is a mistake
    assert refused.returncode != 0
    assert "--new-db starts a new database where one is missing" in refused.stderr
    db.unlink()
    without_copy = _serve_once(db)
    assert "restore it from a backup" in without_copy.stderr
    assert not db.exists()
    fresh = start_server((*ARGS, "--new-db"), db=db)
    assert _operations(fresh) == []


def test_the_store_itself_refuses_to_recreate_a_marked_database(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    SQLiteStore(db).close()
    db.unlink()
    with pytest.raises(StoreError, match="is missing"):
        SQLiteStore(db)
    assert not db.exists()
    SQLiteStore(db, new_db=True).close()
    assert db.exists()
