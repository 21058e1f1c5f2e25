"""``forewarn serve --workers 2``: two processes on the same ports, one of them leading."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.scaleout.conftest import VIRTUAL
from tests.scaleout.pg import PgDatabase
from tests.support.marks import SLOW
from tests.support.serverproc import ServerProcess
from tests.support.waiting import wait_until

pytestmark = SLOW


def _fresh(url: str, **kw: Any) -> httpx.Response:
    """One request on a new connection (the kernel picks a worker per connection)."""
    with httpx.Client(timeout=10, trust_env=False) as client:
        return client.request(kw.pop("method", "GET"), url, **kw)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def workers(pg: PgDatabase, tmp_path: Path) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path / "unused.db", ["--store", pg.url, "--workers", "2", *VIRTUAL])
    server.start(timeout=90)
    yield server
    server.stop()


def test_workers_share_the_ports_and_the_fleet_and_survive_losing_the_leader(
    workers: ServerProcess,
) -> None:
    cluster_url = workers.control_url + "/api/v1/cluster"

    def members() -> list[dict[str, Any]] | None:
        data = _fresh(cluster_url).json()
        roles = sorted(m["role"] for m in data["members"])
        return data["members"] if roles == ["follower", "leader"] else None

    listed = wait_until(members, 30, "two workers, one leading")
    answered_by = {_fresh(cluster_url).json()["member"] for _ in range(40)}
    assert answered_by == {m["id"] for m in listed}  # connections reach both workers
    created = _fresh(
        workers.control_url + "/api/v1/operations",
        method="POST",
        json={"kind": "user-reboot", "target": "web-0"},
    )
    assert created.status_code == 201, created.text
    event_id = created.json()["event_ids"][0]
    endpoint = workers.imds_url + "/metadata/scheduledevents"
    docs = [
        _fresh(endpoint, params={"api-version": "2020-07-01"}, headers={"Metadata": "true"})
        for _ in range(20)
    ]
    assert all(d.status_code == 200 for d in docs)

    def everywhere() -> bool:
        params, headers = {"api-version": "2020-07-01"}, {"Metadata": "true"}
        seen = [_fresh(endpoint, params=params, headers=headers).json() for _ in range(10)]
        return all([e["EventId"] for e in doc["Events"]] == [event_id] for doc in seen)

    wait_until(everywhere, 10, "the event on every worker")
    leader = next(m for m in listed if m["role"] == "leader")
    os.kill(leader["pid"], signal.SIGKILL)

    def healed() -> list[dict[str, Any]] | None:
        now = members()
        return now if now and all(m["id"] != leader["id"] for m in now) else None

    now = wait_until(healed, 60, "a new leader and the dead worker replaced")
    assert any("is serving again" in line for line in workers.banner)
    approved = _fresh(
        workers.control_url + f"/api/v1/events/{event_id}/approve", method="POST", json={}
    )
    assert approved.status_code == 200 and approved.json()["status"] == "Started"
    pids = [m["pid"] for m in now]
    workers.stop()
    assert not any(_alive(pid) for pid in pids)
