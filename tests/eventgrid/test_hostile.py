"""Hostile input on the new routes: a clear 4xx, nothing created, the server still serving;
a webhook that never answers does not hold up the metadata endpoint."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from tests.eventgrid.conftest import GridServer

GRAPH = "/providers/Microsoft.ResourceGraph/resources"
AUTH = {"Authorization": "Bearer x"}


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1, 2]",
        b"{" * 5000,
        json.dumps({"name": "ab", "properties": {}}).encode(),
        json.dumps({"name": "x" * 100, "properties": {}}).encode(),
        json.dumps({"name": "okname", "properties": {"destination": "x"}}).encode(),
        json.dumps({"name": "okname", "properties": {"destination": {
            "endpointType": "WebHook", "properties": {"endpointUrl": "file:///etc/passwd"}}}}).encode(),
        json.dumps({"name": "okname", "properties": {"destination": {
            "endpointType": "EventHub", "properties": {"endpointUrl": "http://a"}}}}).encode(),
        json.dumps({"name": "okname", "properties": {"destination": {
            "endpointType": "WebHook",
            "properties": {"endpointUrl": "http://a/" + "x" * 3000}}}}).encode(),
        json.dumps({"name": "okname", "properties": {"eventDeliverySchema": "Custom",
            "destination": {"endpointType": "WebHook",
                            "properties": {"endpointUrl": "http://a"}}}}).encode(),
        json.dumps({"name": "okname", "properties": {"retryPolicy": {"maxDeliveryAttempts": 0},
            "destination": {"endpointType": "WebHook", "properties": {"endpointUrl": "http://a"}}}}).encode(),
    ],
)  # fmt: skip
def test_bad_subscription_bodies_are_400_and_create_nothing(grid: GridServer, body: bytes) -> None:
    r = grid.server.control(
        "POST", "/api/v1/eventgrid/subscriptions", content=body,
        headers={"content-type": "application/json"},
    )  # fmt: skip
    assert r.status_code == 400, r.text
    assert r.json()["error"]
    assert grid.server.control("GET", "/api/v1/eventgrid/subscriptions").json() == []


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"query": 5},
        {"query": ""},
        {"query": "maintenanceresources | where " + "(" * 200 + "1" + ")" * 200},
        {"query": "maintenanceresources | " + "take 1 | " * 5000 + "take 1"},
        {"query": "maintenanceresources | where name == 'x"},
        {"query": "maintenanceresources | where __import__('os')"},
        {"query": "maintenanceresources", "options": {"$top": 0}},
        {"query": "maintenanceresources", "options": {"$skipToken": "garbage"}},
        {"query": "maintenanceresources", "options": {"resultFormat": "csv"}},
        {"query": "maintenanceresources", "subscriptions": "all"},
    ],
)
def test_bad_queries_are_arm_400s(grid: GridServer, body: dict[str, object]) -> None:
    with grid.arm.https() as http:
        r = http.post(GRAPH, params={"api-version": "2021-03-01"}, json=body, headers=AUTH)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "BadRequest" and error["message"]


def test_the_graph_route_wants_an_api_version_and_post(grid: GridServer) -> None:
    with grid.arm.https() as http:
        assert (
            http.post(GRAPH, json={"query": "maintenanceresources"}, headers=AUTH).status_code
            == 400
        )
        assert (
            http.get(GRAPH, params={"api-version": "2021-03-01"}, headers=AUTH).status_code == 405
        )
        assert http.post(GRAPH, params={"api-version": "2021-03-01"}, json={}).status_code == 401


def test_a_webhook_that_never_answers_never_slows_the_endpoint(grid: GridServer) -> None:
    """The handshake is answered; every notification is accepted and never answered."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            data = conn.recv(65536)
            if b"SubscriptionValidation" in data:
                body_start = data.find(b"\r\n\r\n") + 4
                while b"validationCode" not in data[body_start:] or not data.rstrip().endswith(
                    b"]"
                ):
                    data += conn.recv(65536)
                code = json.loads(data[body_start:])[0]["data"]["validationCode"]
                answer = json.dumps({"validationResponse": code}).encode()
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(answer), answer)
                )
                conn.close()
            else:
                held.append(conn)  # never answered

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        r = grid.subscribe("silent", f"http://127.0.0.1:{port}/hook")
        assert r.status_code == 201, r.text
        ids = [grid.trigger("user-reboot", vm)["event_ids"][0] for vm in ("pub", "pub2")]
        started = time.monotonic()
        for _ in range(20):
            assert grid.server.imds().status_code == 200
        assert time.monotonic() - started < 10  # generous: polls are not held by the webhook
        for event_id in ids:
            grid.action(event_id, "cancel")
        sub = grid.server.control("GET", "/api/v1/eventgrid/subscriptions/silent").json()
        assert sub["forewarn"]["pending"] >= 1
    finally:
        grid.unsubscribe("silent")
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        sock.close()
