"""Notices waiting for a webhook outlive a crash: a real server (time scale 100, so Event
Grid's retries take 0.1 s, 0.3 s, 0.6 s, 3 s) SIGKILLed while a notice waits for a retry,
or while the webhook holds it, then started again on the same database. The webhook then
gets the notice with the same ``id``, the attempts counted on, and the history says so;
a deleted subscription's notices are gone; one whose time to live ran out while the
server was down is given up, the reason in the history."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

from tests.arm.conftest import ArmServer, start_arm_server
from tests.eventgrid.conftest import FLEET, GridServer
from tests.eventgrid.webhook import Behaviour, Received, webhook
from tests.support.waiting import wait_until


def _kept(tmp_path: Path) -> list[tuple[str, str, int]]:
    """The pending notices in the server's database: (subscription, id, attempts)."""
    db = sqlite3.connect(f"file:{tmp_path / 'forewarn.db'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT subscription, id, attempts FROM eventgrid_pending").fetchall()
    finally:
        db.close()
    return [(str(s), str(i), int(a)) for s, i, a in rows]


def _grid_id(r: Received) -> str:
    (item,) = r.json()
    return str(item["id"])


def _deliveries_in_history(grid: GridServer, event_id: str, name: str) -> list[dict[str, Any]]:
    entries = grid.server.control("GET", f"/api/v1/history?event_id={event_id}&limit=1000")
    return [
        e["detail"]
        for e in entries.json()
        if e["kind"] == "eventgrid.delivery" and e["detail"]["subscription"] == name
    ]


def _restart(arm: ArmServer, tmp_path: Path, *, kill: bool = True) -> GridServer:
    """SIGKILL the server (or wait for the webhook's kill to end it), then start it
    again on its database (which keeps the time scale)."""
    if kill:
        arm.server.kill()
    elif arm.server.proc is not None:
        arm.server.proc.wait(timeout=20)
    return GridServer(start_arm_server(tmp_path, FLEET))


class Killer:
    """A webhook's hook that SIGKILLs the server once (while or after it answers); left
    in place, it never touches the server started after it (unsetting it raced the
    webhook's thread, which may not have called it yet)."""

    def __init__(self, arm: ArmServer) -> None:
        self.arm = arm

    def __call__(self, r: Received) -> None:
        del r
        proc = self.arm.server.proc
        if proc is not None and proc.poll() is None:
            proc.kill()


def test_a_notice_waiting_for_a_retry_is_redelivered_after_a_sigkill(tmp_path: Path) -> None:
    grid = GridServer(start_arm_server(tmp_path, FLEET, extra=("--time-scale", "100")))
    try:
        with (
            webhook(Behaviour(fail_first=4)) as (url, hook),
            webhook(Behaviour(fail_first=1000)) as (doomed_url, doomed),
        ):
            assert grid.subscribe("patient", url).status_code == 201
            assert grid.subscribe("doomed", doomed_url).status_code == 201
            (event_id,) = grid.trigger("user-reboot", "pub2")["event_ids"]
            hook.wait(4)  # 4 answered 500: the 5th attempt is 3 s away
            wait_until(lambda: ("patient", _grid_id(hook.wait(1)[0]), 4) in _kept(tmp_path))
            doomed.wait(2)
            r = grid.server.control("DELETE", "/api/v1/eventgrid/subscriptions/doomed", json={})
            assert r.status_code == 204, r.text
            assert [row for row in _kept(tmp_path) if row[0] == "doomed"] == []
            doomed_before = len(doomed.notifications())

            grid = _restart(grid.arm, tmp_path)
            got = hook.wait(5)
            ids = {_grid_id(r) for r in got}
            assert len(ids) == 1  # the same Event Grid event, before and after the crash
            assert got[4].headers["aeg-delivery-count"] == "4"  # the attempts counted on
            (delivered,) = grid.wait_deliveries("patient", "delivered", 1)
            assert delivered["attempt"] == 5 and delivered["id"] in ids
            wait_until(
                lambda: any(
                    d["outcome"] == "delivered" and d["id"] in ids
                    for d in _deliveries_in_history(grid, event_id, "patient")
                )
            )
            wait_until(lambda: _kept(tmp_path) == [])  # delivered: no longer kept
            assert len(doomed.notifications()) == doomed_before  # deleted with its notices
            names = [
                s["name"]
                for s in grid.server.control("GET", "/api/v1/eventgrid/subscriptions").json()
            ]
            assert names == ["patient"]
    finally:
        grid.server.stop()


def test_a_notice_the_crash_cut_off_is_delivered_again_never_lost(tmp_path: Path) -> None:
    """Killed while the webhook holds the notice (no answer yet): delivered again after
    the restart. Killed just after the webhook answered 200: delivered once or twice,
    always with the same id (at least once)."""
    grid = GridServer(start_arm_server(tmp_path, FLEET, extra=("--time-scale", "100")))
    try:
        cut = Behaviour(before_answer=Killer(grid.arm))
        with webhook(cut) as (cut_url, _):
            assert grid.subscribe("cut", cut_url).status_code == 201
            (event_id,) = grid.trigger("user-reboot", "pub2")["event_ids"]
            cut.wait(1)
            grid = _restart(grid.arm, tmp_path, kill=False)
            got = cut.wait(2)
            assert len({_grid_id(r) for r in got}) == 1  # the same Event Grid event
            assert _subject_event(got[1]) == event_id
            grid.wait_deliveries("cut", "delivered", 1)
            wait_until(lambda: _kept(tmp_path) == [])
            r = grid.server.control("DELETE", "/api/v1/eventgrid/subscriptions/cut", json={})
            assert r.status_code == 204, r.text

        late = Behaviour(after_answer=Killer(grid.arm))
        with webhook(late) as (late_url, _):
            assert grid.subscribe("late", late_url).status_code == 201
            (second,) = grid.trigger("user-reboot", "pub")["event_ids"]
            late.wait(1)
            grid = _restart(grid.arm, tmp_path, kill=False)
            wait_until(lambda: _kept(tmp_path) == [])  # redelivered, if it was still kept
            got = late.notifications()
            assert 1 <= len(got) <= 2 and len({_grid_id(r) for r in got}) == 1
            assert _subject_event(got[0]) == second
    finally:
        grid.server.stop()


def _subject_event(r: Received) -> str:
    (item,) = r.json()
    return str(item["data"]["resourceInfo"]["name"])


def test_a_notice_whose_time_to_live_ran_out_while_down_is_given_up(tmp_path: Path) -> None:
    grid = GridServer(start_arm_server(tmp_path, FLEET, extra=("--time-scale", "100")))
    try:
        hold = Behaviour(before_answer=Killer(grid.arm))
        with webhook(hold) as (url, _):
            # one minute to live: 0.6 s at time scale 100
            body = {"retryPolicy": {"eventTimeToLiveInMinutes": 1}}
            assert grid.subscribe("brief", url, **body).status_code == 201
            (event_id,) = grid.trigger("user-reboot", "pub2")["event_ids"]
            (first,) = hold.wait(1)
            assert grid.arm.server.proc is not None
            grid.arm.server.proc.wait(timeout=20)  # the hook killed it
            time.sleep(0.7)  # the notice's time to live runs out while no server runs
            grid = _restart(grid.arm, tmp_path, kill=False)
            (failed,) = grid.wait_deliveries("brief", "failed", 1)
            assert failed["answer"] == "time to live expired" and failed["id"] == _grid_id(first)
            wait_until(
                lambda: any(
                    d["outcome"] == "failed" and d["answer"] == "time to live expired"
                    for d in _deliveries_in_history(grid, event_id, "brief")
                )
            )
            assert _kept(tmp_path) == []
            assert len(hold.notifications()) == 1  # not sent again
    finally:
        grid.server.stop()
