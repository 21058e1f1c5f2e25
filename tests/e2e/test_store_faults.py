"""Store faults against a real ``forewarn serve``: the endpoint keeps serving, writes
answer 503 with a JSON error, health says why, recovery is automatic, nothing
acknowledged is lost; a damaged database is refused at start with one clear line.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import VIRTUAL, Platform
from tests.support.faults import small_disk
from tests.support.serverproc import ServerProcess
from tests.support.waiting import wait_until

DISK_FULL = "full"


def _platform(db: Path) -> tuple[ServerProcess, Platform]:
    server = ServerProcess(db, [*VIRTUAL, "--enablement", "always"]).start()
    return server, Platform(server)


def _health(platform: Platform) -> tuple[int, dict[str, object]]:
    response = platform.control_client.get("/healthz")
    return response.status_code, response.json()


def test_a_full_disk_keeps_the_endpoint_up_and_loses_nothing() -> None:
    with small_disk() as disk:
        db = disk.root / "f.db"
        server, platform = _platform(db)
        try:
            acknowledged = [platform.trigger("user-reboot", "web-0")["id"]]
            event_id = platform.events()[0]["id"]
            document = platform.doc("web-1")
            disk.fill()
            refused = None
            for name in ("web-1", "web-2", "web-3", "web-4", "web-5", "jumpbox"):
                response = platform.control_client.post(
                    "/api/v1/operations", json={"kind": "user-reboot", "target": name}
                )
                if response.status_code == 201:  # fitted in pages SQLite already had
                    acknowledged.append(response.json()["id"])
                    document = platform.doc("web-1")
                    continue
                refused = response
                break
            assert refused is not None, "the disk never filled up"
            assert refused.status_code == 503
            assert refused.headers["content-type"].startswith("application/json")
            assert DISK_FULL in refused.json()["error"]
            # The endpoint serves the last committed document; approvals are refused.
            assert platform.doc("web-1") == document
            platform.approve("web-1", event_id, expect=503)
            status, health = _health(platform)
            assert status == 503 and health["status"] == "unhealthy"
            assert DISK_FULL in str(health["reason"])
            disk.free()
            wait_until(lambda: _health(platform)[0] == 200, timeout=15, what="recovery")
            acknowledged.append(platform.trigger("user-reboot", "BackEnd_IN_0")["id"])
            platform.approve("web-1", event_id)
            server.kill()  # SIGKILL: only what is on disk survives
            server, platform = _platform(db)
            assert [op["id"] for op in platform.call("GET", "/api/v1/operations")] == acknowledged
        finally:
            platform.close()
            server.stop()


def test_deleting_the_database_under_the_server_refuses_writes(tmp_path: Path) -> None:
    db = tmp_path / "d.db"
    server, platform = _platform(db)
    try:
        op = platform.trigger("user-reboot", "web-0", notice_seconds=3600)
        for suffix in ("", "-wal", "-shm"):
            os.unlink(f"{db}{suffix}")
        response = platform.control_client.post(
            "/api/v1/operations", json={"kind": "user-reboot", "target": "web-1"}
        )
        assert response.status_code == 503, response.text
        assert "was deleted" in response.json()["error"]
        status, health = _health(platform)
        assert status == 503 and "was deleted" in str(health["reason"])
        wait_until(  # said in the logs too
            lambda: any("was deleted" in line for line in server.banner), 10, what="a log line"
        )
        rescued = sorted(tmp_path.glob("d.db.rescued-*"))
        assert len(rescued) == 1
        with sqlite3.connect(rescued[0]) as copy:
            assert [r[0] for r in copy.execute("SELECT id FROM operations")] == [op["id"]]
    finally:
        platform.close()
        server.stop()


def _serve_once(db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "forewarn", "serve", "--db", str(db),
         "--imds-bind", "127.0.0.1:0", "--control-bind", "127.0.0.1:0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def _made(tmp_path: Path) -> Path:
    db = tmp_path / "m.db"
    server, platform = _platform(db)
    platform.trigger("user-reboot", "web-0")
    platform.close()
    server.stop()
    return db


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("UPDATE operations SET data = 'not json'", r"row 1 of table operations cannot be read"),
        ("UPDATE meta SET value = '{oops' WHERE key = 'fleet'", r"the stored fleet cannot be read"),
        ("DROP TABLE events", r"table events is missing"),
    ],
    ids=["garbage-row", "garbage-fleet", "dropped-table"],
)
def test_a_damaged_database_is_refused_at_start_in_one_line(
    tmp_path: Path, damage: str, message: str
) -> None:
    db = _made(tmp_path)
    with sqlite3.connect(db) as raw:
        raw.execute(damage)
    result = _serve_once(db)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("forewarn: error: ")
    assert str(db) in lines[0]
    assert __import__("re").search(message, lines[0]), lines[0]
    assert "Traceback" not in result.stderr
