"""The dashboard's scenario buttons: a real ``forewarn serve`` plays a named scenario in
the background through its own control API, one at a time, and says how it went."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from forewarn.control import ControlApp
from tests.control.conftest import JSON, TestClient
from tests.support.fabrics import make_fabric
from tests.support.serverproc import VIRTUAL, ServerProcess


def _runs(server: ServerProcess) -> list[dict[str, Any]]:
    response = server.control("GET", "/api/v1/scenarios")
    assert response.status_code == 200
    runs: list[dict[str, Any]] = response.json()["runs"]
    return runs


def test_a_named_scenario_plays_in_the_background(
    start_server: Callable[..., ServerProcess],
) -> None:
    server = start_server(VIRTUAL)
    listed = server.control("GET", "/api/v1/scenarios").json()
    assert "user-reboot" in listed["names"] and listed["runs"] == []
    started = server.control(
        "POST", "/api/v1/scenarios/runs", json={"name": "user-reboot"}, headers=JSON
    )
    assert started.status_code == 202, started.text
    run = started.json()
    assert (run["name"], run["status"]) == ("user-reboot", "running")
    deadline = time.monotonic() + 90
    while _runs(server)[-1]["status"] == "running":
        busy = server.control(
            "POST", "/api/v1/scenarios/runs", json={"name": "live-migration"}, headers=JSON
        )
        assert busy.status_code in (409, 202)  # 202 only if it ended in between
        if busy.status_code == 202:
            break
        assert "still playing" in busy.json()["error"]
        assert time.monotonic() < deadline, "the scenario did not end"
        time.sleep(0.5)
    (first, *_) = _runs(server)
    assert first["id"] == run["id"]
    assert first["status"] == "held"
    [row] = server.control("GET", "/api/v1/reactions").json()["operations"]
    assert first["detail"] == (  # one verdict: the report's on how the fleet reacted, too
        "every expectation held; the fleet's reaction, not judged by the expectations "
        f"(forewarn report): reboot: {row['verdict']}, {row['progress']}"
    )
    operations = server.control("GET", "/api/v1/operations").json()
    assert any(op["kind"] == "user-reboot" for op in operations)  # played through the API


def test_unknown_scenarios_and_servers_without_an_engine(
    start_server: Callable[..., ServerProcess],
) -> None:
    server = start_server(["--clock", "virtual"])
    unknown = server.control(
        "POST", "/api/v1/scenarios/runs", json={"name": "meteor-strike"}, headers=JSON
    )
    assert unknown.status_code == 404
    assert "no scenario called 'meteor-strike'" in unknown.json()["error"]
    bad = server.control("POST", "/api/v1/scenarios/runs", json={"nam": "x"}, headers=JSON)
    assert bad.status_code == 400
    for body in (b'{"name": "user-reb\xffoot"}', b'\xff{"name": "user-reboot"}'):
        not_utf8 = server.control("POST", "/api/v1/scenarios/runs", content=body, headers=JSON)
        assert not_utf8.status_code == 400
        assert not_utf8.json()["error"] == (
            'invalid body: it is not valid UTF-8; expected {"name": "..."}'
        )
    assert _runs(server) == []  # nothing started
    bare = TestClient(ControlApp(make_fabric()).asgi)  # embedded, no scenario engine given
    assert bare.get("/api/v1/scenarios").json() == {"names": [], "runs": []}
    refused = bare.post("/api/v1/scenarios/runs", headers=JSON, json={"name": "user-reboot"})
    assert refused.status_code == 404
    assert bare.get("/api/v1/dashboard").json()["scenarios"] is None
