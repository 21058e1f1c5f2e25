"""Event Grid deliveries from a real server, each parsed by the real azure-eventgrid and
cloudevents models: Scheduled -> Started -> Completed, Canceled, the handshakes, retries
with back-off and the same id, nothing for a scope that does not publish."""

from __future__ import annotations

import itertools
import time
from typing import Any

from azure.eventgrid import EventGridEvent
from cloudevents.v1.http import from_http

from tests.arm.conftest import SUBSCRIPTION
from tests.eventgrid.conftest import GridServer
from tests.eventgrid.webhook import Behaviour, Received, webhook
from tests.support.cli import run_cli

EMITTED = "Microsoft.ResourceNotifications.MaintenanceResources.ScheduledEventEmitted"


def _grid_events(received: list[Received]) -> list[EventGridEvent]:
    out = []
    for r in received:
        assert r.headers["aeg-event-type"] == "Notification"
        (item,) = r.json()
        out.append(EventGridEvent.from_dict(item))
    return out


def _props(data: Any) -> dict[str, Any]:
    info = data["resourceInfo"]
    assert info["type"] == "microsoft.maintenance/scheduledevents"
    props: dict[str, Any] = info["properties"]
    assert info["name"] == props["EventId"]
    return props


def test_scheduled_started_completed_in_both_schemas_and_nothing_for_a_quiet_scope(
    grid: GridServer,
) -> None:
    with webhook() as (url, hook), webhook() as (ce_url, ce_hook):
        r = grid.subscribe("lifecycle", url)
        assert r.status_code == 201, r.text
        assert r.json()["properties"]["provisioningState"] == "Succeeded"
        r = grid.subscribe("lifecycle-ce", ce_url, "CloudEventSchemaV1_0")
        assert r.status_code == 201, r.text
        assert ce_hook.received[0].method == "OPTIONS"
        assert ce_hook.received[0].headers["webhook-request-origin"] == "eventgrid.azure.net"

        quiet = grid.trigger("user-reboot", "quiet")
        op = grid.trigger("user-reboot", "pub")
        (event_id,) = op["event_ids"]
        hook.wait(1)
        grid.action(event_id, "approve")
        hook.wait(2)
        grid.arm.advance(3600)
        got = _grid_events(hook.wait(3))
        ce = ce_hook.wait(3)
        try:
            assert [_props(e.data)["EventStatus"] for e in got] == [
                "Scheduled",
                "Started",
                "Completed",
            ]
            for e in got:
                assert e.event_type == EMITTED
                assert e.subject.endswith(
                    f"/providers/Microsoft.Maintenance/scheduledevents/{event_id}"
                )
                assert "/virtualMachines/pub/" in e.subject
                assert e.topic == f"/subscriptions/{SUBSCRIPTION}"
                props = _props(e.data)
                assert props["EventId"] == event_id and props["Resources"] == ["pub"]
                assert props["EventType"] == "Reboot" and props["EventSource"] == "User"
            assert _props(got[0].data)["NotBefore"].endswith(" GMT")
            assert _props(got[1].data)["NotBefore"] == ""
            assert len({e.id for e in got}) == 3  # a new id per state
            cloud = [from_http(r.headers, r.body) for r in ce]
            assert [_props(c.data)["EventStatus"] for c in cloud] == [
                "Scheduled",
                "Started",
                "Completed",
            ]
            assert all(c["type"] == EMITTED and c["specversion"] == "1.0" for c in cloud)
            assert all(
                r.headers["content-type"].startswith("application/cloudevents+json") for r in ce
            )
            # nothing was ever sent about the scope that does not publish
            quiet_id = quiet["event_ids"][0]
            assert all(quiet_id not in r.body.decode() for r in hook.received + ce_hook.received)
        finally:
            grid.unsubscribe("lifecycle")
            grid.unsubscribe("lifecycle-ce")


def test_a_canceled_event_is_delivered_canceled(grid: GridServer) -> None:
    with webhook() as (url, hook):
        assert grid.subscribe("cancels", url).status_code == 201
        try:
            (event_id,) = grid.trigger("user-reboot", "pub2")["event_ids"]
            hook.wait(1)
            grid.action(event_id, "cancel")
            got = _grid_events(hook.wait(2))
            assert [_props(e.data)["EventStatus"] for e in got] == ["Scheduled", "Canceled"]
            assert {_props(e.data)["EventId"] for e in got} == {event_id}
        finally:
            grid.unsubscribe("cancels")


def test_a_failing_subscriber_gets_retries_with_back_off_and_the_same_id(grid: GridServer) -> None:
    with webhook(Behaviour(fail_first=3)) as (url, hook):
        assert grid.subscribe("flaky", url).status_code == 201
        try:
            (event_id,) = grid.trigger("user-reboot", "pub2")["event_ids"]
            tries = hook.wait(4)[:4]
            ids = {r.json()[0]["id"] for r in tries}
            assert len(ids) == 1  # the same event, redelivered
            assert [r.headers["aeg-delivery-count"] for r in tries] == ["0", "1", "2", "3"]
            gaps = [b.at - a.at for a, b in itertools.pairwise(tries)]
            # Event Grid's 10 s, 30 s, 60 s at time scale 100
            assert gaps[0] >= 0.09 and gaps[1] >= 0.29 and gaps[2] >= 0.59, gaps
            assert gaps[0] < gaps[1] < gaps[2]
            log = grid.wait_deliveries("flaky", "delivered", 1)
            rows = [d for d in grid.deliveries("flaky") if d["event_id"] == event_id]
            assert [d["outcome"] for d in rows][:4] == [
                "retrying",
                "retrying",
                "retrying",
                "delivered",
            ]
            assert [d["answer"] for d in rows][:4] == ["500", "500", "500", "200"]
            assert log[0]["attempt"] == 4
            sub = grid.server.control("GET", "/api/v1/eventgrid/subscriptions/flaky").json()
            assert sub["forewarn"]["lastError"] == "500"
            grid.action(event_id, "cancel")
        finally:
            grid.unsubscribe("flaky")


def test_a_subscriber_refusing_with_400_is_not_retried(grid: GridServer) -> None:
    with webhook(Behaviour(fail_first=100, status=400)) as (url, hook):
        body = {"retryPolicy": {"maxDeliveryAttempts": 5}}
        assert grid.subscribe("refuser", url, **body).status_code == 201
        try:
            (event_id,) = grid.trigger("user-reboot", "pub2")["event_ids"]
            failed = grid.wait_deliveries("refuser", "failed", 1)
            assert failed[0]["attempt"] == 1 and failed[0]["answer"] == "400"
            assert len(hook.notifications()) == 1
            grid.action(event_id, "cancel")
        finally:
            grid.unsubscribe("refuser")


def test_bad_subscriptions_are_refused_with_the_reason_and_nothing_kept(grid: GridServer) -> None:
    with (
        webhook(Behaviour(validate="wrong")) as (wrong, _),
        webhook(Behaviour(validate="refuse")) as (refuse, _),
        webhook(Behaviour(allow_origin=None)) as (no_ce, _),
    ):
        cases = [
            (grid.subscribe("gone", "http://127.0.0.1:9/hook"), "unreachable"),
            (grid.subscribe("wrong", wrong), "does not match the validationCode"),
            (grid.subscribe("refused", refuse), "answered 403"),
            (grid.subscribe("no-ce", no_ce, "CloudEventSchemaV1_0"), "OPTIONS request got 405"),
        ]
        for response, reason in cases:
            assert response.status_code == 400, response.text
            assert reason in response.json()["error"]
    names = [
        s["name"] for s in grid.server.control("GET", "/api/v1/eventgrid/subscriptions").json()
    ]
    assert not {"gone", "wrong", "refused", "no-ce"} & set(names)


def test_a_manual_handshake_waits_for_the_validation_url(grid: GridServer) -> None:
    with webhook(Behaviour(validate="manual")) as (url, hook):
        r = grid.subscribe("manual", url)
        assert r.status_code == 201
        assert r.json()["properties"]["provisioningState"] == "AwaitingManualAction"
        try:
            validation = hook.received[0].json()[0]
            assert validation["eventType"] == "Microsoft.EventGrid.SubscriptionValidationEvent"
            link = validation["data"]["validationUrl"]
            assert (
                grid.server.control("GET", "/api/v1/eventgrid/validate/manual?code=x").status_code
                == 404
            )
            path = link.split("/", 3)[3]
            assert grid.server.control("GET", "/" + path).status_code == 200
            sub = grid.server.control("GET", "/api/v1/eventgrid/subscriptions/manual").json()
            assert sub["properties"]["provisioningState"] == "Succeeded"
        finally:
            grid.unsubscribe("manual")


def test_every_delivery_outcome_is_in_the_history(grid: GridServer) -> None:
    """A webhook failing once then answering: a retrying then a delivered entry, both
    with the delivery's Event Grid id, in the durable history and in `forewarn history`."""
    with webhook(Behaviour(fail_first=1)) as (url, hook):
        assert grid.subscribe("noted", url).status_code == 201
        try:
            (event_id,) = grid.trigger("user-reboot", "pub2")["event_ids"]
            (delivered,) = grid.wait_deliveries("noted", "delivered", 1)[:1]
            grid_id = hook.wait(2)[1].json()[0]["id"]
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                entries = [
                    e
                    for e in grid.server.control(
                        "GET", f"/api/v1/history?event_id={event_id}&limit=1000"
                    ).json()
                    if e["kind"] == "eventgrid.delivery" and e["detail"]["subscription"] == "noted"
                ]
                if any(e["detail"]["outcome"] == "delivered" for e in entries):
                    break
                time.sleep(0.05)
            first = [e["detail"] for e in entries if e["detail"]["status"] == "Scheduled"]
            assert [(d["outcome"], d["attempt"], d["answer"]) for d in first[:2]] == [
                ("retrying", 1, "500"),
                ("delivered", 2, "200"),
            ]
            # the same Event Grid event, as the webhook and the deliveries list saw it
            assert {d["id"] for d in first[:2]} == {grid_id} == {delivered["id"]}
            assert first[0]["retry_in"] > 0
            assert all(e["scope_id"] == "pub2" and e["event_id"] == event_id for e in entries)
            shown = run_cli(["history", "--limit", "1000"], grid.server.control_url, columns=80)
            assert shown.code == 0
            assert "eventgrid.delivery" in shown.stdout
            assert all(len(line) <= 80 for line in shown.stdout.splitlines())
            grid.action(event_id, "cancel")
        finally:
            grid.unsubscribe("noted")
