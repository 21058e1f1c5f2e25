"""``forewarn fleet reset`` cut short by SIGKILL, on SQLite and on PostgreSQL.

A reset is one change: after a restart the fleet is either exactly as it was before it
(events, operations, deleted VMs, every scope's incarnation and every VM's document,
byte for byte) or entirely reset (no event, no operation, every VM back, every scope's
incarnation one higher), never some scopes of each; a reset answered 200 is always there.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.scaleout.conftest import VIRTUAL
from tests.support.marks import SLOW
from tests.support.serverproc import ServerProcess, trigger
from tests.support.waiting import wait_until

pytestmark = SLOW


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServerProcess]:
    store: list[str] = []
    if request.param == "postgresql":
        store = ["--store", request.getfixturevalue("pg").url]
    process = _started(ServerProcess(tmp_path / "forewarn.db", [*store, *VIRTUAL]))
    yield process
    process.stop()


def _started(server: ServerProcess) -> ServerProcess:
    """``server`` started, once it may change the fleet (on PostgreSQL: once it leads)."""
    server.start(timeout=90)

    def leads() -> bool:
        response = server.control("GET", "/api/v1/cluster")
        return response.status_code == 404 or response.json().get("role") == "leader"

    wait_until(leads, 30, "the process to lead")
    return server


def _get(server: ServerProcess, path: str) -> Any:
    response = server.control("GET", path)
    assert response.status_code == 200, (path, response.text)
    return response.json()


def _drill(server: ServerProcess) -> None:
    """Something in several scopes to reset: a deleted Spot VM, a started and a
    scheduled event, a rollout."""
    trigger(server, "spot-eviction", "workers_0")
    advanced = server.control("POST", "/api/v1/clock/advance", json={"seconds": 3600})
    assert advanced.status_code == 200, advanced.text
    started = trigger(server, "user-reboot", "web-0")
    approved = server.control("POST", f"/api/v1/events/{started}/approve", json={})
    assert approved.status_code == 200, approved.text
    trigger(server, "user-reboot", "jumpbox")
    rollout = server.control(
        "POST", "/api/v1/operations", json={"kind": "platform-reboot", "target": "shop"}
    )
    assert rollout.status_code == 201, rollout.text


def _state(server: ServerProcess) -> dict[str, Any]:
    """Everything a reset changes, as the control API shows it."""
    vms = {v["name"]: v["status"] for v in _get(server, "/api/v1/vms")}
    scopes = {s["id"]: s["incarnation"] for s in _get(server, "/api/v1/topology")["scopes"]}
    documents = {}
    for vm in vms:
        response = server.control("GET", f"/api/v1/documents/{vm}")
        documents[vm] = (response.status_code, response.text)
    return {
        "events": sorted((e["id"], e["status"]) for e in _get(server, "/api/v1/events")),
        "operations": sorted((o["id"], o["state"]) for o in _get(server, "/api/v1/operations")),
        "vms": vms,
        "incarnations": scopes,
        "documents": documents,
    }


def _is_reset_of(after: dict[str, Any], before: dict[str, Any]) -> bool:
    """Whether ``after`` is ``before`` reset, whole: every scope, every VM."""
    assert after["events"] == [] and after["operations"] == [], after
    assert set(after["vms"].values()) == {"running"}, after["vms"]
    assert after["incarnations"] == {s: i + 1 for s, i in before["incarnations"].items()}
    for vm, (status, text) in after["documents"].items():
        assert status == 200, (vm, text)
        doc = httpx.Response(200, text=text).json()
        assert doc["Events"] == [], (vm, doc)
    return True


def _reset_and_kill(server: ServerProcess, delay: float | None) -> tuple[int | str, float]:
    """Send a reset on a connection already open, SIGKILL the server ``delay`` s later
    (None: as soon as it is answered); its answer (or error) and how long it took."""
    answer: list[int | str] = []
    with httpx.Client(base_url=server.control_url, timeout=30, trust_env=False) as client:
        assert client.get("/healthz").status_code == 200  # the connection the reset takes
        answered = threading.Event()

        def reset() -> None:
            try:
                answer.append(client.post("/api/v1/fleet/reset", json={}).status_code)
            except httpx.HTTPError as exc:
                answer.append(type(exc).__name__)
            answered.set()

        sent = time.monotonic()
        sender = threading.Thread(target=reset)
        sender.start()
        answered.wait(30 if delay is None else delay)
        took = time.monotonic() - sent
        server.kill(signal.SIGKILL)
        sender.join(timeout=30)
    return answer[0], took


def test_a_reset_cut_short_by_sigkill_is_there_whole_or_not_at_all(
    server: ServerProcess,
) -> None:
    """First a reset answered, then SIGKILLed (its round trip measured), then resets
    killed a tenth, three tenths and six tenths of that round trip after they were sent."""
    outcomes: list[tuple[float | None, str, int | str]] = []
    round_trip = 0.0
    for fraction in (None, 0.1, 0.3, 0.6):
        if not outcomes or outcomes[-1][1] == "reset":
            _drill(server)
        before = _state(server)
        assert before["events"] and before["operations"]
        delay = None if fraction is None else fraction * round_trip
        answered, took = _reset_and_kill(server, delay)
        if fraction is None:
            assert answered == 200, answered
            round_trip = took
        _started(server)  # the same command, ports and database
        after = _state(server)
        if after == before:
            assert answered != 200, "a reset answered 200 is gone after the restart"
            outcomes.append((delay, "before", answered))
        else:
            assert _is_reset_of(after, before), (before, after)
            history = _get(server, "/api/v1/history?limit=10000")
            resets = [o for o in outcomes if o[1] == "reset"]
            assert [h["kind"] for h in history].count("fleet.reset") == len(resets) + 1
            outcomes.append((delay, "reset", answered))
    print(f"\n(killed after, state after the restart, answer): {outcomes}")
