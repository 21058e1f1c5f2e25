"""The control API refuses bad operations cleanly; the endpoint never exposes it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import SCOPES, Platform


@pytest.fixture(scope="module")
def busy(shared_platform: Platform) -> Platform:
    """A server with every scope on and an operation in progress; tests must not change it."""
    shared_platform.enable(*(vms[0] for vms in SCOPES.values()))
    shared_platform.trigger("live-migration", "web-1")
    return shared_platform


def state(platform: Platform) -> tuple[Any, ...]:
    """Everything a failed request must leave as it was."""
    docs = {scope: platform.scope_doc(scope) for scope in SCOPES}
    return (
        docs,
        platform.incarnations(),
        platform.events(),
        platform.operations(),
        platform.history(),
    )


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"kind": "self-destruct", "target": "web-0"}, 400, "unknown operation"),
        ({"kind": "user-reboot", "target": "no-such-vm"}, 404, "neither a VM"),
        ({"kind": "spot-eviction", "target": "web-0"}, 400, "Spot"),
        ({"kind": "spot-eviction", "target": "jumpbox"}, 400, "Spot"),
        ({"kind": "scale-in", "target": "FrontEnd_IN_0"}, 400, "scale-set"),
        ({"kind": "user-reboot", "target": "web"}, 400, None),
        ({"kind": "user-reboot", "target": "web-0", "notice_seconds": 5}, 400, "minimum"),
        ({"kind": "user-reboot", "target": "web-0", "vms": ["web-1"]}, 400, "either"),
        ({"kind": "user-reboot"}, 400, "exactly one target"),
        ({"target": "web-0"}, 400, "invalid body"),
    ],
)
def test_invalid_operation_is_refused_and_changes_nothing(
    busy: Platform, body: dict[str, Any], status: int, message: str | None
) -> None:
    platform = busy
    before = state(platform)
    response = platform.control_client.post("/api/v1/operations", json=body)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()
    assert list(error) == ["error"] and error["error"]
    if message is not None:
        assert message in error["error"]
    assert state(platform) == before


def test_invalid_event_actions_are_refused(platform: Platform) -> None:
    platform.enable("web-0")
    op = platform.trigger("user-reboot", "web-0")
    [event_id] = op["event_ids"]
    before = state(platform)
    assert "error" in platform.call("POST", f"/api/v1/events/{event_id}/explode", expect=404)
    assert "error" in platform.call("POST", "/api/v1/events/NOPE/approve", expect=404)
    assert "error" in platform.call("POST", f"/api/v1/events/{event_id}/complete", expect=409)
    assert state(platform) == before
    platform.call("POST", f"/api/v1/events/{event_id}/start")
    assert "error" in platform.call("POST", f"/api/v1/events/{event_id}/cancel", expect=409)
    assert "error" in platform.call(
        "POST", "/api/v1/clock/advance", expect=409, json={"seconds": -1}
    )


@pytest.mark.parametrize(
    ("method", "path", "kwargs"),
    [
        ("GET", "/api/v1/events", {}),
        ("GET", "/api/v1/topology", {}),
        ("GET", "/api/v1/history", {}),
        ("GET", "/openapi.json", {}),
        ("POST", "/api/v1/operations", {"json": {"kind": "user-reboot", "target": "web-0"}}),
        ("POST", "/api/v1/clock/advance", {"json": {"seconds": 3600}}),
    ],
)
def test_endpoint_port_never_serves_control_paths(
    busy: Platform, method: str, path: str, kwargs: dict[str, Any]
) -> None:
    platform = busy
    before = state(platform)
    clock = platform.now()
    client = platform.imds_client("web-3")
    response = client.request(method, path, headers={"Metadata": "true"}, **kwargs)
    assert response.status_code == 404
    assert "control" not in response.text.lower()
    assert state(platform) == before
    assert platform.now() == clock
