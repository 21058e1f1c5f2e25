"""Three real ``forewarn serve`` processes on one PostgreSQL database, seen from outside."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.scaleout.conftest import VIRTUAL
from tests.scaleout.fleet import Fleet
from tests.scaleout.pg import PgDatabase, pg_database
from tests.support.marks import SLOW
from tests.support.waiting import wait_until

#: Source addresses of VMs of the demo fleet's availability set "web", and the jumpbox.
WEB_0, WEB_3, WORKERS_0, JUMPBOX = "127.1.0.1", "127.1.0.4", "127.1.0.7", "127.1.0.11"


@pytest.fixture(scope="module")
def pg_shared() -> Iterator[PgDatabase]:
    yield from pg_database()


@pytest.fixture(scope="module")
def fleet(pg_shared: PgDatabase, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """Three processes for the whole module (each test uses VMs of its own)."""
    started = Fleet(tmp_path_factory.mktemp("fleet"), pg_shared.url, 3, VIRTUAL)
    try:
        yield started.start()
    finally:
        started.stop()


def _statuses(doc: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {e["EventId"]: (e["EventStatus"], e["NotBefore"]) for e in doc["Events"]}


def test_an_approval_on_one_front_end_starts_the_event_on_all(
    fleet: Fleet, pg_shared: PgDatabase
) -> None:
    leader = fleet.wait_for_leader()
    here, there = fleet.followers()
    created = fleet.control(
        here, "POST", "/api/v1/operations", json={"kind": "user-reboot", "target": "web-0"}
    )
    assert created.status_code == 201, created.text  # made by the leader, answered here
    event_id = created.json()["event_ids"][0]
    # What a caller did through a follower, that follower shows at once.
    assert [e["id"] for e in fleet.control(here, "GET", "/api/v1/events").json()] == [event_id]
    for index in range(3):
        wait_until(
            lambda i=index: event_id in _statuses(fleet.doc(i, WEB_0)), 10, f"the event on {index}"
        )
    approved = fleet.imds(there, WEB_3, "POST", json={"StartRequests": [{"EventId": event_id}]})
    assert (approved.status_code, approved.content) == (200, b"")
    for index in range(3):
        wait_until(
            lambda i=index: _statuses(fleet.doc(i, WEB_0))[event_id] == ("Started", ""),
            10,
            f"Started on front-end {index}",
        )
    docs = [fleet.doc(i, WEB_3) for i in range(3)]
    assert docs[0] == docs[1] == docs[2]  # same events, same incarnation everywhere
    event = fleet.control(leader, "GET", f"/api/v1/events/{event_id}").json()
    assert event["approved_by"] == "web-3"
    assert pg_shared.execute("SELECT count(*) FROM approval_requests") == [(0,)]  # applied


def test_a_follower_refuses_what_the_leader_would_and_records_nothing(
    fleet: Fleet, pg_shared: PgDatabase
) -> None:
    fleet.wait_for_leader()
    follower = fleet.followers()[0]
    created = fleet.control(
        follower, "POST", "/api/v1/operations", json={"kind": "user-reboot", "target": "workers_0"}
    )
    event_id = created.json()["event_ids"][0]
    wait_until(lambda: event_id in _statuses(fleet.doc(follower, WORKERS_0)), 10, "the event")
    body = {"StartRequests": [{"EventId": event_id}]}
    refused = fleet.imds(follower, JUMPBOX, "POST", json=body)  # another scope's event
    assert refused.status_code == 400
    assert "is not a scheduled event of this VM" in refused.json()["error"]
    garbage = fleet.imds(follower, WORKERS_0, "POST", content=b'{"StartRequests": 5}')
    assert garbage.status_code == 400
    assert pg_shared.execute("SELECT count(*) FROM approval_requests") == [(0,)]
    # Control errors are the leader's, passed back as they are.
    missing = fleet.control(follower, "POST", "/api/v1/events/NO-SUCH-EVENT/approve", json={})
    assert missing.status_code == 404 and "no live event" in missing.json()["error"]
    not_json = fleet.control(
        follower, "POST", f"/api/v1/events/{event_id}/approve", content=b"{}",
        headers={"Content-Type": "text/plain"},
    )  # fmt: skip
    assert not_json.status_code == 415
    assert _statuses(fleet.doc(follower, WORKERS_0))[event_id][0] == "Scheduled"


def test_status_and_metrics_show_who_leads_and_each_lag(fleet: Fleet) -> None:
    leader = fleet.wait_for_leader()
    follower = fleet.followers()[0]
    head = fleet.cluster(leader)["applied_seq"]

    def all_listed() -> dict[str, Any] | None:
        data = fleet.cluster(follower)
        return data if len(data["members"]) == 3 and data["applied_seq"] >= head else None

    data = wait_until(all_listed, 15, "every process in the cluster status")
    leader_member = fleet.cluster(leader)["member"]
    assert data["leader"]["member"] == leader_member and data["role"] == "follower"
    roles = {m["id"]: m["role"] for m in data["members"]}
    assert roles[leader_member] == "leader" and roles[data["member"]] == "follower"
    out = subprocess.run(
        [sys.executable, "-m", "forewarn", "--control", fleet.servers[follower].control_url,
         "status"],
        capture_output=True, text=True, timeout=60, env={"COLUMNS": "200", "PATH": ""},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert f"leader: {leader_member}" in out.stdout
    assert f"{data['member']} (this)" in out.stdout and "follower" in out.stdout
    metrics = fleet.control(follower, "GET", "/metrics").text
    assert "forewarn_cluster_leader 0.0" in metrics
    url = fleet.servers[leader].control_url
    series = f'forewarn_cluster_member_leader{{control_url="{url}",member="{leader_member}"}}'
    assert f"{series} 1.0" in metrics
    assert "forewarn_replication_lag_seconds " in metrics
    assert "forewarn_cluster_leader 1.0" in fleet.control(leader, "GET", "/metrics").text


def test_a_virtual_clock_advanced_on_a_follower_moves_every_process(fleet: Fleet) -> None:
    fleet.wait_for_leader()
    follower = fleet.followers()[-1]
    created = fleet.control(
        follower, "POST", "/api/v1/operations", json={"kind": "user-reboot", "target": "jumpbox"}
    )
    event_id = created.json()["event_ids"][0]
    advanced = fleet.control(follower, "POST", "/api/v1/clock/advance", json={"seconds": 901})
    assert advanced.status_code == 200, advanced.text
    for index in range(3):  # answered once this follower caught up; the others follow
        wait_until(
            lambda i=index: _statuses(fleet.doc(i, JUMPBOX))[event_id] == ("Started", ""),
            10,
            f"Started on {index}",
        )
        now = fleet.control(index, "GET", "/api/v1/clock").json()["now"]
        assert now == pytest.approx(advanced.json()["now"], abs=1e-6)


def test_status_of_a_single_sqlite_server_says_so(start_server: Any) -> None:
    server = start_server(list(VIRTUAL))
    out = subprocess.run(
        [sys.executable, "-m", "forewarn", "--control", server.control_url, "status"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "a single process on its own SQLite database" in out.stdout


def test_a_process_with_another_clock_than_the_fleet_is_refused(pg: PgDatabase) -> None:
    from forewarn.store.postgres import PostgresStore

    store = PostgresStore(pg.url)
    store.save_settings({"clock": "virtual", "time_scale": 60.0})
    store.close()
    out = subprocess.run(
        [sys.executable, "-m", "forewarn", "serve", "--store", pg.url, "--time-scale", "10",
         "--imds-bind", "127.0.0.1:0", "--control-bind", "127.0.0.1:0"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        f"forewarn: error: the fleet in {pg.url} runs with --time-scale 60.0; start every "
        "process with the same --time-scale (or without it)"
    ]


def test_a_store_that_is_not_postgresql_is_refused_in_one_line() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "forewarn", "serve", "--store", "sqlite:///x.db"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2
    assert "--store must be a PostgreSQL URL" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.slow
@SLOW[1]
def test_a_follower_forwards_the_callers_token(pg: PgDatabase, tmp_path: Path) -> None:
    fleet = Fleet(tmp_path, pg.url, 2, [*VIRTUAL, "--control-token", "s3cret"])
    try:
        fleet.start()
        token = {"Authorization": "Bearer s3cret"}
        wait_until(
            lambda: fleet.control(0, "GET", "/api/v1/cluster", headers=token).json()["leader"][
                "member"
            ],
            30,
            "a leader",
        )
        leader = next(
            i for i in range(2)
            if fleet.control(i, "GET", "/api/v1/cluster", headers=token).json()["role"] == "leader"
        )  # fmt: skip
        follower = 1 - leader
        body = {"kind": "user-reboot", "target": "web-0"}
        refused = fleet.control(follower, "POST", "/api/v1/operations", json=body)
        assert refused.status_code == 401
        wrong = fleet.control(
            follower, "POST", "/api/v1/operations", json=body,
            headers={"Authorization": "Bearer nope"},
        )  # fmt: skip
        assert wrong.status_code == 401
        created = fleet.control(follower, "POST", "/api/v1/operations", json=body, headers=token)
        assert created.status_code == 201, created.text
        assert fleet.control(follower, "GET", "/api/v1/cluster").status_code == 401
    finally:
        fleet.stop()


def test_the_store_comes_from_the_environment_and_its_password_is_never_shown() -> None:
    env = {**os.environ, "FOREWARN_SERVE_STORE": "postgresql://fw:pa55@db.example:5432/fleet"}
    out = subprocess.run(
        [sys.executable, "-m", "forewarn", "serve", "--workers", "3", "--print-config"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "store: postgresql://fw:***@db.example:5432/fleet" in out.stdout
    assert "workers: 3" in out.stdout and "pa55" not in out.stdout
    alone = subprocess.run(
        [sys.executable, "-m", "forewarn", "serve", "--workers", "2", "--print-config"],
        capture_output=True, text=True, timeout=120,
        env={k: v for k, v in os.environ.items() if k != "FOREWARN_SERVE_STORE"},
    )  # fmt: skip
    assert alone.returncode == 2
    assert "--workers needs --store postgresql://" in alone.stderr
