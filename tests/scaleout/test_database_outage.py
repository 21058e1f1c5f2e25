"""The fleet's PostgreSQL database made unreachable under two real front-ends.

The test itself takes the database away (``ALTER DATABASE ... ALLOW_CONNECTIONS false``
and every session of it terminated), then gives it back. The promise: while it is away,
every front-end says so promptly instead of failing obscurely: ``GET /api/v1/cluster``
(and ``forewarn status``) answer 503 with the reason, a change sent to a follower is 503
at once, and the leader's ``/healthz`` turns 503 within about a second; once the database
is back, a leader is elected again and changes are made.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import psycopg

from tests.scaleout.fleet import Fleet, wait_until
from tests.scaleout.pg import ADMIN_URL, PgDatabase

#: How long "promptly" may take on a loaded 2-core machine (the causes were 5-6 s).
PROMPT = 3.0


def admin_connection() -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=5)


@contextmanager
def _unreachable(pg: PgDatabase) -> Iterator[None]:
    with admin_connection() as admin:
        admin.execute(f'ALTER DATABASE "{pg.name}" ALLOW_CONNECTIONS false')
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
            (pg.name,),
        )
    try:
        yield
    finally:
        with admin_connection() as admin:
            admin.execute(f'ALTER DATABASE "{pg.name}" ALLOW_CONNECTIONS true')


def _role(fleet: Fleet, index: int) -> str | None:
    response = fleet.control(index, "GET", "/api/v1/cluster")
    return str(response.json()["role"]) if response.status_code == 200 else None


def _timed(call: Callable[[], httpx.Response]) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


def test_an_unreachable_database_is_a_prompt_503_with_the_reason_everywhere(
    start_fleet: Callable[..., Fleet], pg: PgDatabase
) -> None:
    fleet = start_fleet(2)
    leader = fleet.wait_for_leader()
    (follower,) = fleet.followers()
    wait_until(
        lambda: fleet.control(follower, "GET", "/healthz").status_code == 200, 30, "following"
    )
    with _unreachable(pg):
        started = time.monotonic()
        wait_until(
            lambda: fleet.control(leader, "GET", "/healthz").status_code == 503,
            30,
            "the old leader's /healthz to say 503",
            interval=0.05,
        )
        assert time.monotonic() - started < PROMPT
        time.sleep(1.2)  # the follower's cached leader address has expired
        body = {"kind": "user-reboot", "target": "web-0"}
        changed, took = _timed(
            lambda: fleet.control(follower, "POST", "/api/v1/operations", json=body)
        )
        assert changed.status_code == 503, changed.text
        assert took < PROMPT
        assert "leader" in changed.json()["error"]
        for index in (leader, follower):
            status, took = _timed(lambda i=index: fleet.control(i, "GET", "/api/v1/cluster"))
            assert status.status_code == 503, status.text
            assert "cannot be read now" in status.json()["error"]
            assert took < PROMPT
        out = subprocess.run(
            [sys.executable, "-m", "forewarn", "--control", fleet.servers[follower].control_url,
             "status"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert out.returncode != 0
        assert "Traceback" not in out.stderr
        assert "cannot be read now" in out.stderr
    # Back: a leader again, healthy front-ends, changes made through the follower (a
    # front-end may answer 503 for a moment while its connections come back).
    back = time.monotonic()
    (new_leader,) = wait_until(
        lambda: [i for i in (0, 1) if _role(fleet, i) == "leader"], 60, "a leader"
    )
    for index in (0, 1):
        wait_until(
            lambda i=index: fleet.control(i, "GET", "/healthz").status_code == 200, 60, "healthy"
        )
    other = 1 - new_leader
    made = fleet.control(other, "POST", "/api/v1/operations", json=body)
    assert made.status_code == 201, made.text
    print(f"recovered {time.monotonic() - back:.1f} s after the database came back")


#: RELIABILITY §2b: with the database away, a change or a VM's approval sent to a follower
#: is 503 within about a second (each waits at most 1 s for a connection). The median of
#: three must be under this (it was 2.0-4.0 s for changes, 3.3-5.3 s for approvals).
ABOUT_A_SECOND = 1.5
WEB_3 = "127.1.0.4"


def test_a_follower_answers_changes_and_approvals_503_within_about_a_second(
    start_fleet: Callable[..., Fleet], pg: PgDatabase
) -> None:
    fleet = start_fleet(2)
    fleet.wait_for_leader()
    (follower,) = fleet.followers()
    created = fleet.control(
        follower, "POST", "/api/v1/operations", json={"kind": "user-reboot", "target": "web-3"}
    )
    assert created.status_code == 201, created.text
    event_id = created.json()["event_ids"][0]
    wait_until(lambda: event_id in str(fleet.doc(follower, WEB_3)), 10, "the event on the follower")
    body = {"kind": "user-reboot", "target": "web-0"}
    approval = {"StartRequests": [{"EventId": event_id}]}
    changes: list[float] = []
    approvals: list[float] = []
    with _unreachable(pg):
        for _ in range(3):
            time.sleep(1.2)  # the follower's cached leader address has expired
            changed, took = _timed(
                lambda: fleet.control(follower, "POST", "/api/v1/operations", json=body)
            )
            assert changed.status_code == 503, changed.text
            changes.append(took)
            approved, took = _timed(lambda: fleet.imds(follower, WEB_3, "POST", json=approval))
            assert approved.status_code == 503, approved.text
            approvals.append(took)
    print(f"503 after {changes} s (changes), {approvals} s (approvals)")
    assert sorted(changes)[1] < ABOUT_A_SECOND, changes
    assert sorted(approvals)[1] < ABOUT_A_SECOND, approvals
