"""The live stream of a real ``forewarn serve``: a snapshot, then every change as it is
published, and once a second the clock and the VMs whose polls or states moved."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.dashboard.sse import Stream
from tests.support.serverproc import ServerProcess

JSON = {"Content-Type": "application/json"}
TOKEN = "dashboard-token"
#: web-0's address in the demo fleet (``forewarn topology``).
WEB0 = "127.1.0.1"


@pytest.fixture
def server(start_server: Callable[..., ServerProcess]) -> ServerProcess:
    return start_server(["--time-scale", "60", "--enablement", "always", "--rate-limit", "0"])


@pytest.fixture
def stream(server: ServerProcess) -> Iterator[Stream]:
    opened = Stream(server.control_url + "/api/v1/stream")
    yield opened
    opened.close()


def _event_in(change: dict[str, Any], event_id: str, status: str) -> bool:
    return any(e["id"] == event_id and e["status"] == status for e in change["events"])


def test_a_stream_starts_with_a_snapshot_then_follows_every_change(
    server: ServerProcess, stream: Stream
) -> None:
    assert stream.status_code == 200
    assert stream.headers["content-type"].startswith("text/event-stream")
    snapshot = stream.next("snapshot")
    assert snapshot["vms"] == 14 and snapshot["events"] == []
    assert sum(kind["vms"] for kind in snapshot["kinds"]) == 14  # one row per kind
    assert sum(len(kind["worst"]) for kind in snapshot["kinds"]) == 4  # each scope of a few
    created = server.control(
        "POST", "/api/v1/operations", json={"kind": "user-reboot", "target": "web-0"}, headers=JSON
    ).json()
    (event_id,) = created["event_ids"]
    change = stream.next("change", lambda c: _event_in(c, event_id, "Scheduled"))
    assert [h["kind"] for h in change["history"]] == ["operation.created", "event.scheduled"]
    assert change["scopes"][0]["id"] == "web"
    approved = server.control("POST", f"/api/v1/events/{event_id}/approve", json={}, headers=JSON)
    assert approved.status_code == 200
    change = stream.next("change", lambda c: _event_in(c, event_id, "Started"))
    assert change["events"][0]["approved_by"] == "control"
    # The user reboot holds its event 10 min, 10 s at time scale 60: then it is removed.
    stream.next("change", lambda c: event_id in c["removed"], timeout=60)


def _sets(tick: dict[str, Any]) -> dict[str, Any]:
    """The availability sets' totals in ``tick`` (web's kind), or {} unchanged."""
    return next((k for k in tick["kinds"] if k["kind"] == "availability_set"), {})


def test_ticks_carry_the_kinds_and_scopes_whose_vms_polled_or_changed_state(
    server: ServerProcess, stream: Stream
) -> None:
    stream.next("snapshot")
    response = server.imds(vm_address=WEB0)
    assert response.status_code == 200
    tick = stream.next("tick", lambda t: "web" in t["moved"])
    assert tick["moved"] == ["web"] and tick["moved_total"] == 1 and _sets(tick)["polled"] == 1
    page = server.control("GET", "/api/v1/dashboard/scopes/web").json()  # what the page asks
    web0 = next(vm for vm in page["vms"] if vm["name"] == "web-0")
    assert abs(web0["polled"] - time.time()) < 30
    server.control(
        "POST", "/api/v1/operations", json={"kind": "hardware-failure", "target": "web-3"},
        headers=JSON,
    )  # fmt: skip  # created Started: web-3 is redeploying at once
    tick = stream.next("tick", lambda t: "redeploying" in _sets(t).get("states", {}))
    assert "web" in tick["moved"]
    page = server.control("GET", "/api/v1/dashboard/scopes/web").json()
    assert next(vm for vm in page["vms"] if vm["name"] == "web-3")["status"] == "redeploying"


def test_the_stream_needs_the_token(start_server: Callable[..., ServerProcess]) -> None:
    os.environ["FOREWARN_SERVE_CONTROL_TOKEN"] = TOKEN
    try:
        server = start_server(["--enablement", "always"])
    finally:
        del os.environ["FOREWARN_SERVE_CONTROL_TOKEN"]
    refused = Stream(server.control_url + "/api/v1/stream")
    assert refused.status_code == 401
    refused.close()
    allowed = Stream(server.control_url + "/api/v1/stream", {"Authorization": f"Bearer {TOKEN}"})
    assert allowed.next("snapshot")["version"]
    allowed.close()


def test_open_streams_never_hold_up_a_shutdown(server: ServerProcess) -> None:
    streams = [Stream(server.control_url + "/api/v1/stream") for _ in range(3)]
    for opened in streams:
        opened.next("snapshot")
    started = time.monotonic()
    assert server.kill(signal.SIGTERM) == 0
    assert time.monotonic() - started < 15
    for opened in streams:
        assert opened.ended.wait(10)
        opened.close()
