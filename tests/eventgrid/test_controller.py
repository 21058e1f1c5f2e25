"""A central controller against a real server: a webhook that passes the validation
handshake, takes each event from Event Grid and acknowledges it through ARM's Maintenance
route (the notice's subject + ``/acknowledge``, sent by azure-core's pipeline as a real
controller would) for the VMs it looks after, and not for the others. The rehearsal report
then grades it; and its subscription outlives a restart of the server."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.core.rest import HttpRequest

from tests.arm.conftest import ArmServer, start_arm_server
from tests.eventgrid.conftest import FLEET, GridServer
from tests.eventgrid.webhook import Behaviour, Received, webhook
from tests.support.cli import run_cli
from tests.support.waiting import wait_until

MINUTE = 60.0
#: How long the webhook takes to answer a Scheduled notice (platform seconds).
SLOW_ANSWER = 2.0


class Controller:
    """Acknowledges, through ARM, each Scheduled event of the VMs it looks after, once its
    webhook has answered (from its own thread, as a queue consumer would)."""

    def __init__(self, arm: ArmServer, looks_after: set[str]) -> None:
        self.arm = arm
        self.looks_after = looks_after
        self.inbox: queue.Queue[Received | None] = queue.Queue()
        self.acknowledged: list[tuple[str, int, Any]] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def slow_answer(self, r: Received) -> None:
        if r.properties()["EventStatus"] == "Scheduled":
            self.arm.advance(SLOW_ANSWER)  # the webhook takes its time, on the platform clock

    def _run(self) -> None:
        compute = self.arm.compute()
        while (r := self.inbox.get()) is not None:
            props = r.properties()
            if props["EventStatus"] != "Scheduled" or not self.looks_after & set(
                props["Resources"]
            ):
                continue
            subject = r.json()[0]["subject"]
            answer = compute.send_request(
                HttpRequest("POST", f"{subject}/acknowledge?api-version=2025-11-01")
            )
            self.acknowledged.append((props["EventId"], answer.status_code, answer.json()))


@pytest.fixture
def grid(tmp_path: Path) -> Iterator[GridServer]:
    arm = start_arm_server(tmp_path, FLEET, extra=("--time-scale", "100"))
    yield GridServer(arm)
    arm.server.stop()


def _report(grid: GridServer) -> dict[str, Any]:
    r = grid.server.control("GET", "/api/v1/reactions")
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


def _row(report: dict[str, Any], event_id: str) -> dict[str, Any] | None:
    for c in report["controllers"]:
        for row in c["events"]:
            if row["event_id"] == event_id:
                found: dict[str, Any] = row
                return found
    return None


def test_a_controller_acknowledging_through_arm_is_graded_like_a_vm(grid: GridServer) -> None:
    assert _report(grid)["controllers"] == []  # no subscription: nothing to grade
    controller = Controller(grid.arm, looks_after={"pub"})
    behaviour = Behaviour(before_answer=controller.slow_answer, after_answer=controller.inbox.put)
    with webhook(behaviour) as (url, _):
        controller.thread.start()
        r = grid.subscribe("controller", url)
        assert r.status_code == 201, r.text
        assert r.json()["properties"]["provisioningState"] == "Succeeded"

        (looked_after,) = grid.trigger("user-reboot", "pub")["event_ids"]
        wait_until(lambda: controller.acknowledged, 30, "the controller's acknowledgement")
        assert controller.acknowledged == [(looked_after, 200, {"value": "Successfully Approved"})]
        (ignored,) = grid.trigger("user-reboot", "pub2")["event_ids"]
        # pub: Scheduled, Started; pub2: Scheduled, answered (and its delivery recorded)
        # before the clock moves on
        grid.wait_deliveries("controller", "delivered", 3)
        grid.arm.advance(16 * MINUTE)  # pub2's NotBefore passes: the platform starts it
        wait_until(
            lambda: (row := _row(_report(grid), ignored)) and row["grade"] != "pending",
            30, "pub2's event graded",
        )  # fmt: skip
        controller.inbox.put(None)
        controller.thread.join(10)

    report = _report(grid)
    [graded] = report["controllers"]
    assert graded["subscription"] == "controller"
    assert graded["verdict"] == "warn", graded  # one event never acknowledged
    on_time = _row(report, looked_after)
    assert on_time is not None
    assert (on_time["verdict"], on_time["grade"]) == ("acknowledged", "ok")
    # told once its webhook answered (float sums at the clock's magnitude: approx)
    assert on_time["detected_after"] == pytest.approx(SLOW_ANSWER, abs=1e-3)
    assert on_time["acknowledged_after"] == pytest.approx(SLOW_ANSWER, abs=1e-3)
    assert on_time["acknowledged_in_time"] is True
    assert (on_time["approved_by"], on_time["approved_via"]) == ("pub", "arm")
    never = _row(report, ignored)
    assert never is not None
    assert (never["verdict"], never["grade"]) == ("not-acknowledged", "warn")
    assert never["detected_after"] == pytest.approx(SLOW_ANSWER, abs=1e-3)
    assert never["acknowledged_at"] is None
    assert graded["totals"]["acknowledged"] == 1
    assert graded["totals"]["not-acknowledged"] == 1
    assert graded["detection"]["values"] == pytest.approx([SLOW_ANSWER, SLOW_ANSWER], abs=1e-3)
    assert graded["acknowledgement"]["values"] == pytest.approx([SLOW_ANSWER], abs=1e-3)
    # The VMs are graded as before: neither polled, so each missed its event.
    assert [e["verdict"] for e in report["events"]] == ["fail", "fail"]

    page = grid.server.control("GET", "/api/v1/report").text
    assert 'id="controller-controller"' in page
    assert f'data-event="{looked_after}" data-verdict="acknowledged"' in page
    shown = run_cli(["report"], control=grid.server.control_url)
    assert shown.code == 0, shown.stderr
    assert "Controller controller (warn): 2 events: 1 acknowledged through ARM" in shown.stdout
    assert "never acknowledged: the platform started it at NotBefore" in shown.stdout


def test_subscriptions_outlive_a_restart_and_deliveries_resume(tmp_path: Path) -> None:
    arm = start_arm_server(tmp_path, FLEET, extra=("--time-scale", "100"))
    try:
        with webhook() as (url, hook):
            grid = GridServer(arm)
            assert grid.subscribe("survivor", url).status_code == 201
            manual = Behaviour(validate="manual")
            with webhook(manual) as (manual_url, _):
                assert grid.subscribe("manual", manual_url).status_code == 201
            grid.trigger("user-reboot", "pub")
            hook.wait(1)
            arm.server.stop()

            arm = start_arm_server(tmp_path, FLEET)  # the database keeps the time scale
            grid = GridServer(arm)
            listed = {
                s["name"]: s["properties"]["provisioningState"]
                for s in grid.server.control("GET", "/api/v1/eventgrid/subscriptions").json()
            }
            assert listed == {"survivor": "Succeeded", "manual": "AwaitingManualAction"}
            (event_id,) = grid.trigger("user-reboot", "pub2")["event_ids"]
            got = hook.wait(2)
            assert got[-1].properties()["EventId"] == event_id
            handshakes = [r for r in hook.received if r.method == "POST" and not _notice(r)]
            assert len(handshakes) == 1  # no second handshake after the restart
            assert grid.wait_deliveries("survivor", "delivered", 1)
    finally:
        arm.server.stop()


def _notice(r: Received) -> bool:
    return r.headers.get("aeg-event-type") == "Notification"
