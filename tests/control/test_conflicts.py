"""The control API's answers for requests that collide or overreach: 409 naming the
operation in progress, 400 naming the bound of an announced duration."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from forewarn.fabric import Fabric
from tests.control.conftest import API, TestClient, observe


def test_a_second_user_operation_answers_409_naming_the_pending_event(
    client: TestClient, fabric: Fabric, submit: Callable[..., dict[str, Any]]
) -> None:
    first = submit("user-reboot", "web-0")
    before = observe(fabric)
    response = client.post(f"{API}/operations", json={"kind": "user-redeploy", "target": "web-0"})
    assert response.status_code == 409
    assert response.headers["content-type"] == "application/json"
    message = response.json()["error"]
    assert first["event_ids"][0] in message and first["id"] in message
    assert observe(fabric) == before


def test_a_huge_duration_answers_400_with_the_bound(client: TestClient, fabric: Fabric) -> None:
    before = observe(fabric)
    body = {"kind": "host-update", "target": "host-1", "duration_seconds": 10**22}
    response = client.post(f"{API}/operations", json=body)
    assert response.status_code == 400
    assert response.json() == {
        "error": "duration_seconds must be -1 (unknown) or 0 to 604800 (7 days)"
    }
    assert observe(fabric) == before
