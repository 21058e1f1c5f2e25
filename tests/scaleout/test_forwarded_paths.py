"""A follower forwards a change to the leader with its path as sent: decoded, an encoded
``?`` or ``/`` inside an event id would have reached the leader as another route. Two
real ``forewarn serve`` processes on one PostgreSQL database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.scaleout.conftest import VIRTUAL
from tests.scaleout.fleet import Fleet
from tests.scaleout.pg import PgDatabase, pg_database


@pytest.fixture(scope="module")
def pg_shared() -> Iterator[PgDatabase]:
    yield from pg_database()


@pytest.fixture(scope="module")
def fleet(pg_shared: PgDatabase, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    started = Fleet(tmp_path_factory.mktemp("fleet"), pg_shared.url, 2, VIRTUAL)
    try:
        yield started.start()
    finally:
        started.stop()


def test_a_follower_forwards_the_path_as_sent(fleet: Fleet) -> None:
    leader = fleet.wait_for_leader()
    (follower,) = fleet.followers()
    created = fleet.control(
        follower, "POST", "/api/v1/operations", json={"kind": "user-reboot", "target": "web-1"}
    )
    assert created.status_code == 201, created.text
    (event_id,) = created.json()["event_ids"]
    events = f"/api/v1/events/{event_id}"
    # An encoded '?': decoded, the leader would have seen POST /api/v1/events/<id> (405).
    asked = fleet.control(follower, "POST", f"{events}%3Fx/approve", json={})
    assert asked.status_code == 404 and "no live event" in asked.json()["error"], asked.text
    # An encoded '/': refused on the follower itself, never forwarded as the approval.
    asked = fleet.control(follower, "POST", f"{events}%2Fapprove", json={})
    assert asked.status_code == 404 and "no such route" in asked.json()["error"], asked.text
    assert fleet.control(leader, "GET", events).json()["status"] == "Scheduled"
    # An encoded letter is decoded by the leader: the approval of that very event.
    encoded = f"/api/v1/events/%{ord(event_id[0]):02X}{event_id[1:]}/approve"
    approved = fleet.control(follower, "POST", encoded, json={})
    assert approved.status_code < 300, approved.text
    assert fleet.control(leader, "GET", events).json()["approved_by"] is not None
