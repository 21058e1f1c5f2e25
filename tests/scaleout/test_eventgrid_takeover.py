"""Event Grid in a scaled-out fleet: a process that takes the lead delivers to the
subscriptions the store keeps then, not to the ones it knew when it started (those made
and deleted since went through another leader), and the notices the last leader left
waiting for a retry."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

from tests.eventgrid.conftest import FLEET
from tests.eventgrid.webhook import Behaviour, Received, subscription_body, webhook
from tests.scaleout.conftest import VIRTUAL
from tests.scaleout.fleet import Fleet
from tests.scaleout.pg import PgDatabase
from tests.support.waiting import wait_until

JSON = {"Content-Type": "application/json"}


def _trigger(fleet: Fleet, index: int, target: str) -> str:
    response = fleet.control(
        index, "POST", "/api/v1/operations", json={"kind": "user-reboot", "target": target}
    )
    assert response.status_code == 201, response.text
    (event_id,) = response.json()["event_ids"]
    return str(event_id)


def test_a_new_leader_delivers_to_the_subscriptions_kept_when_it_takes_over(
    start_fleet: Callable[..., Fleet], tmp_path: Path
) -> None:
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(FLEET)
    fleet = start_fleet(2, ("--fleet", str(fleet_file), *VIRTUAL))
    leader = fleet.wait_for_leader()
    (follower,) = [i for i in fleet.alive() if i != leader]
    with (
        webhook() as (kept_url, kept),
        webhook() as (gone_url, gone),
        webhook() as (late_url, late),
    ):

        def subscribe(name: str, url: str) -> None:  # through the follower: forwarded
            body = subscription_body(name, url)
            made = fleet.control(follower, "POST", "/api/v1/eventgrid/subscriptions", json=body)
            assert made.status_code == 201, made.text

        subscribe("kept", kept_url)
        subscribe("gone", gone_url)
        fleet.servers[follower].stop()  # starts again knowing those two ...
        fleet.servers[follower].start(90)
        subscribe("late", late_url)  # ... not this one ...
        first = _trigger(fleet, leader, "pub")
        assert kept.wait(1)[0].properties()["EventId"] == first
        assert gone.wait(1)
        deleted = fleet.control(  # ... and one of them is deleted
            follower, "DELETE", "/api/v1/eventgrid/subscriptions/gone", headers=JSON
        )
        assert deleted.status_code in (200, 204), deleted.text

        os.kill(fleet.servers[leader].proc.pid, signal.SIGKILL)  # type: ignore[union-attr]
        wait_until(lambda: fleet.leader_index() == follower, 30, "the follower leads")
        second = _trigger(fleet, follower, "pub2")
        assert kept.wait(2)[-1].properties()["EventId"] == second
        assert [n.properties()["EventId"] for n in late.wait(2)] == [first, second]
        listed = fleet.control(follower, "GET", "/api/v1/eventgrid/subscriptions").json()
        assert sorted(s["name"] for s in listed) == ["kept", "late"]
        assert len(gone.notifications()) == 1  # deleted before the takeover: nothing more


def test_a_new_leader_delivers_the_notice_the_old_one_left_waiting_for_a_retry(
    start_fleet: Callable[..., Fleet], pg: PgDatabase, tmp_path: Path
) -> None:
    """The leader SIGKILLed while a notice waits for its fifth attempt (time scale 100:
    3 s away): the process that takes the lead delivers it, the same id, the attempts
    counted on, and its history says so."""
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(FLEET)
    fleet = start_fleet(2, ("--fleet", str(fleet_file), "--time-scale", "100", *VIRTUAL))
    leader = fleet.wait_for_leader()
    (follower,) = [i for i in fleet.alive() if i != leader]

    def kept() -> list[tuple[object, ...]]:
        return pg.execute("SELECT subscription, id, attempts FROM eventgrid_pending")

    with webhook(Behaviour(fail_first=4)) as (url, hook):
        body = subscription_body("patient", url)
        made = fleet.control(leader, "POST", "/api/v1/eventgrid/subscriptions", json=body)
        assert made.status_code == 201, made.text
        event_id = _trigger(fleet, leader, "pub")
        tries = hook.wait(4)
        (grid_id,) = {r.json()[0]["id"] for r in tries}
        wait_until(lambda: kept() == [("patient", grid_id, 4)], 10, "the fourth attempt kept")

        os.kill(fleet.servers[leader].proc.pid, signal.SIGKILL)  # type: ignore[union-attr]
        wait_until(lambda: fleet.leader_index() == follower, 30, "the follower leads")
        fifth = hook.wait(5)[4]
        assert fifth.json()[0]["id"] == grid_id
        assert fifth.headers["aeg-delivery-count"] == "4"

        def delivered() -> bool:
            history = fleet.control(
                follower, "GET", f"/api/v1/history?event_id={event_id}&limit=1000"
            ).json()
            return any(
                e["kind"] == "eventgrid.delivery"
                and e["detail"]["outcome"] == "delivered"
                and e["detail"]["id"] == grid_id
                and e["detail"]["attempt"] == 5
                for e in history
            )

        wait_until(delivered, 30, "the delivery in the new leader's history")
        wait_until(lambda: kept() == [], 10, "the delivered notice no longer kept")


def test_a_new_leader_delivers_what_a_change_owed_when_the_old_one_died(
    start_fleet: Callable[..., Fleet], pg: PgDatabase, tmp_path: Path
) -> None:
    """The leader SIGKILLed after a change was written but before it could keep the
    change's notice pending for its subscribers (the test holds ``eventgrid_pending``
    locked): the notice was written with the change (the outbox), and the process that
    takes the lead delivers it to both webhooks, one of which fails twice first, and
    takes it out of the outbox."""
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(FLEET)
    fleet = start_fleet(2, ("--fleet", str(fleet_file), "--time-scale", "100", *VIRTUAL))
    leader = fleet.wait_for_leader()
    (follower,) = [i for i in fleet.alive() if i != leader]

    def owed() -> list[tuple[object, ...]]:
        return pg.execute("SELECT id FROM outbox")

    with webhook() as (url, steady), webhook(Behaviour(fail_first=2)) as (flaky_url, flaky):
        for name, hook_url in (("steady", url), ("flaky", flaky_url)):
            body = subscription_body(name, hook_url)
            made = fleet.control(leader, "POST", "/api/v1/eventgrid/subscriptions", json=body)
            assert made.status_code == 201, made.text
        first = _trigger(fleet, leader, "pub")
        assert steady.wait(1)[0].properties()["EventId"] == first
        wait_until(lambda: owed() == [], 10, "the first notice taken out of the outbox")

        with pg.connect() as blocker:
            blocker.execute("BEGIN")
            blocker.execute("LOCK TABLE eventgrid_pending IN ACCESS EXCLUSIVE MODE")
            second = _trigger(fleet, leader, "pub2")  # written: answered once durable
            (notice_id,) = owed()[0]
            assert len(steady.notifications()) == 1  # the leader cannot keep it pending
            os.kill(fleet.servers[leader].proc.pid, signal.SIGKILL)  # type: ignore[union-attr]
            blocker.execute("ROLLBACK")

        wait_until(lambda: fleet.leader_index() == follower, 30, "the follower leads")

        # Event Grid delivers at least once: a redelivery of the first notice may come
        # before the second, so wait for the second itself, not for a count
        def seconds() -> list[Received]:
            return [n for n in steady.notifications() if n.properties()["EventId"] == second]

        wait_until(seconds, 30, "the second notice delivered by the new leader")
        (delivered,) = seconds()
        assert delivered.json()[0]["id"] == notice_id  # the id written with the change
        assert second in {n.properties()["EventId"] for n in flaky.wait(4)}
        wait_until(lambda: owed() == [], 10, "the outbox emptied by the new leader")
