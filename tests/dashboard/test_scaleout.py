"""A scaled-out fleet: every front-end's dashboard follows the replicated state, and the
report merges what every front-end served.

Two real ``forewarn serve --store postgresql://...`` processes: a change made on the
leader reaches a follower's stream; a VM that polls only the follower is graded as
having seen the event, whichever front-end is asked for the report.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.dashboard.sse import Stream
from tests.scaleout.fleet import Fleet
from tests.support.waiting import wait_until

JSON = {"Content-Type": "application/json"}
WEB0 = "127.1.0.1"
ARGS = ("--time-scale", "60", "--rate-limit", "0", "--enablement", "always")


def test_a_follower_s_dashboard_and_report_follow_the_fleet(
    start_fleet: Callable[..., Fleet],
) -> None:
    fleet = start_fleet(2, ARGS)
    leader = fleet.wait_for_leader()
    (follower,) = fleet.followers()
    stream = Stream(fleet.servers[follower].control_url + "/api/v1/stream")
    try:
        snapshot = stream.next("snapshot")
        assert snapshot["leading"] is False
        fleet.doc(follower, WEB0)  # web-0 polls the follower only
        created = fleet.control(
            leader, "POST", "/api/v1/operations", json={"kind": "user-reboot", "target": "web-0"},
            headers=JSON,
        )  # fmt: skip
        assert created.status_code == 201, created.text
        (event_id,) = created.json()["event_ids"]
        # The leader's change, replicated, is published on the follower's stream.
        stream.next("change", lambda c: any(e["id"] == event_id for e in c["events"]))
        wait_until(lambda: fleet.doc(follower, WEB0)["Events"], 20, "the event on the follower")

        def seen_by_web0(index: int) -> dict[str, Any] | None:
            response = fleet.control(index, "GET", "/api/v1/reactions")
            assert response.status_code == 200, response.text
            event = next((e for e in response.json()["events"] if e["id"] == event_id), None)
            if event is None:
                return None
            web0: dict[str, Any] = next(v for v in event["vms"] if v["vm"] == "web-0")
            return web0 if web0["first_seen"] is not None else None

        # What the follower served reaches the leader's report (written within a second).
        graded = wait_until(lambda: seen_by_web0(leader), 20, "the leader's report")
        assert graded["verdict"] == "detected"
        mine = seen_by_web0(follower)
        assert mine is not None
        assert (mine["first_seen"], mine["verdict"]) == (graded["first_seen"], "detected")
        # The poll times the follower saw reach the leader's dashboard too.
        leader_stream = Stream(fleet.servers[leader].control_url + "/api/v1/stream")
        try:
            leader_stream.next(
                "tick", lambda t: any(k["polled"] >= 1 for k in t["kinds"]), timeout=30
            )
        finally:
            leader_stream.close()
        page = fleet.control(leader, "GET", "/api/v1/dashboard/scopes/web").json()
        assert next(vm for vm in page["vms"] if vm["name"] == "web-0")["polled"] is not None
    finally:
        stream.close()
