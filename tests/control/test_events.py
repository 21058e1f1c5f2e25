"""Events: listing and filters, one event, and the approve/start/cancel/complete actions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from forewarn.fabric import Fabric
from tests.control.conftest import API, JSON, TestClient
from tests.support.fabrics import T0

Submit = Callable[..., dict[str, Any]]


@pytest.fixture
def host_update(submit: Submit) -> dict[str, Any]:
    """host-update on host-2: one event in each of web (web-1 and web-4), workers and shop."""
    return submit("host-update", "host-2")


@pytest.fixture
def reboot(submit: Submit) -> dict[str, Any]:
    """user-reboot of web-0: one Scheduled event."""
    return submit("user-reboot", "web-0")


def events(client: TestClient, **params: str) -> list[dict[str, Any]]:
    response = client.get(f"{API}/events", params=params)
    assert response.status_code == 200, response.text
    out: list[dict[str, Any]] = response.json()
    return out


def test_no_events_at_first(client: TestClient) -> None:
    assert events(client) == []


def test_events_list_every_live_event_in_creation_order(
    client: TestClient, host_update: dict[str, Any], reboot: dict[str, Any]
) -> None:
    listed = events(client)
    assert [e["id"] for e in listed] == host_update["event_ids"] + reboot["event_ids"]
    assert [(e["scope"], e["resources"]) for e in listed] == [
        ("web", ["web-1", "web-4"]),
        ("workers", ["workers_2"]),
        ("shop", ["FrontEnd_IN_1"]),
        ("web", ["web-0"]),
    ]
    first = listed[-1]
    assert first == {
        "id": reboot["event_ids"][0],
        "operation_id": reboot["id"],
        "scope": "web",
        "type": "Reboot",
        "source": "User",
        "status": "Scheduled",
        "resources": ["web-0"],
        "description": first["description"],
        "duration_seconds": -1,
        "created_at": T0,
        "not_before": T0 + 900,
        "approved_by": None,
        "started_at": None,
        "approved_via": None,
    }
    assert "restarted" in first["description"]


@pytest.mark.parametrize(
    ("params", "resources"),
    [
        ({"scope": "web"}, [["web-1", "web-4"], ["web-0"]]),
        ({"scope": "shop"}, [["FrontEnd_IN_1"]]),
        ({"scope": "jumpbox"}, []),
        ({"vm": "workers_0"}, [["workers_2"]]),
        ({"vm": "web-2"}, [["web-1", "web-4"], ["web-0"]]),
        ({"vm": "WEB-2"}, [["web-1", "web-4"], ["web-0"]]),
        ({"vm": "jumpbox"}, []),
        ({"scope": "web", "vm": "web-3"}, [["web-1", "web-4"], ["web-0"]]),
        ({"scope": "shop", "vm": "web-3"}, []),
    ],
    ids=lambda v: "-".join(f"{k}={x}" for k, x in v.items()) if isinstance(v, dict) else None,
)
def test_events_filter_by_scope_and_by_what_a_vm_sees(
    client: TestClient,
    host_update: dict[str, Any],
    reboot: dict[str, Any],
    params: dict[str, str],
    resources: list[list[str]],
) -> None:
    assert [e["resources"] for e in events(client, **params)] == resources


def test_event_get_returns_the_listed_event_case_insensitively(
    client: TestClient, host_update: dict[str, Any]
) -> None:
    listed = events(client)
    for event in listed:
        for event_id in (event["id"], event["id"].lower()):
            response = client.get(f"{API}/events/{event_id}")
            assert response.status_code == 200
            assert response.json() == event


#: action -> (steps before it, status it answers, operation state, event still live).
ACTION_RESULTS = {
    "approve": ([], "Started", "started", True),
    "start": ([], "Started", "started", True),
    "cancel": ([], "Canceled", "canceled", False),
    "complete": (["start"], "Completed", "completed", False),
}


@pytest.mark.parametrize("action", list(ACTION_RESULTS))
def test_event_action_answers_the_new_status_and_changes_state(
    client: TestClient, fabric: Fabric, reboot: dict[str, Any], action: str
) -> None:
    before, status, op_state, live = ACTION_RESULTS[action]
    (event_id,) = reboot["event_ids"]
    for step in before:
        assert client.post(f"{API}/events/{event_id}/{step}", headers=JSON).status_code == 200
    incarnation = fabric.view("web").incarnation
    response = client.post(f"{API}/events/{event_id}/{action}", headers=JSON)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert (answer["id"], answer["status"]) == (event_id, status)
    assert client.get(f"{API}/operations/{reboot['id']}").json()["state"] == op_state
    assert fabric.view("web").incarnation == incarnation + 1
    got = client.get(f"{API}/events/{event_id}")
    if live:
        assert got.status_code == 200
        assert got.json() == answer
        assert (answer["not_before"], answer["started_at"]) == (None, T0)
    else:
        assert got.status_code == 404
        assert event_id not in [e["id"] for e in events(client)]


def test_approve_marks_the_event_and_waits_for_the_operations_other_events(
    client: TestClient, host_update: dict[str, Any]
) -> None:
    first, *rest = host_update["event_ids"]
    answer = client.post(f"{API}/events/{first}/approve", headers=JSON).json()
    assert (answer["status"], answer["approved_by"]) == ("Scheduled", "control")
    assert client.get(f"{API}/operations/{host_update['id']}").json()["state"] == "scheduled"
    for event_id in rest:
        assert client.post(f"{API}/events/{event_id}/approve", headers=JSON).status_code == 200
    assert {e["status"] for e in events(client)} == {"Started"}
    assert client.get(f"{API}/operations/{host_update['id']}").json()["state"] == "started"


def test_start_starts_every_event_of_the_operation(
    client: TestClient, host_update: dict[str, Any]
) -> None:
    answer = client.post(f"{API}/events/{host_update['event_ids'][2]}/start", headers=JSON).json()
    assert answer["status"] == "Started"
    assert {e["status"] for e in events(client)} == {"Started"}


def test_actions_accept_a_lower_case_event_id(client: TestClient, reboot: dict[str, Any]) -> None:
    (event_id,) = reboot["event_ids"]
    response = client.post(f"{API}/events/{event_id.lower()}/cancel", headers=JSON)
    assert response.status_code == 200
    assert response.json()["id"] == event_id
