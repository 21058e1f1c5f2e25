"""The clock (read, advance) and the append-only history."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from forewarn.control import ControlApp
from forewarn.fabric import Clock, Fabric
from tests.control.conftest import API, JSON, TestClient, observe
from tests.support.fabrics import T0, make_fabric

Submit = Callable[..., dict[str, Any]]


def test_clock_reads_the_virtual_time(client: TestClient) -> None:
    assert client.get(f"{API}/clock").json() == {
        "now": T0,
        "iso": "2023-11-14T22:13:20+00:00",
        "virtual": True,
        "time_scale": 1.0,
        "next_due": None,
    }


def test_clock_shows_the_next_timer(client: TestClient, submit: Submit) -> None:
    submit("user-reboot", "web-0")
    submit("live-migration", "web-1", notice_seconds=2000)
    assert client.get(f"{API}/clock").json()["next_due"] == T0 + 900


def test_advance_moves_the_clock_and_fires_due_timers(
    client: TestClient, fabric: Fabric, submit: Submit
) -> None:
    op = submit("user-reboot", "web-0")
    (event_id,) = op["event_ids"]
    response = client.post(f"{API}/clock/advance", json={"seconds": 899.5})
    assert response.status_code == 200
    assert response.json()["now"] == T0 + 899.5
    assert client.get(f"{API}/events/{event_id}").json()["status"] == "Scheduled"

    clock = client.post(f"{API}/clock/advance", json={"seconds": 0.5}).json()
    assert (clock["now"], clock["iso"]) == (T0 + 900, "2023-11-14T22:28:20+00:00")
    assert client.get(f"{API}/events/{event_id}").json()["status"] == "Started"
    remove_at = client.get(f"{API}/operations/{op['id']}").json()["remove_at"]
    assert clock["next_due"] == remove_at

    client.post(f"{API}/clock/advance", json={"seconds": remove_at - clock["now"]})
    assert client.get(f"{API}/events/{event_id}").status_code == 404
    assert client.get(f"{API}/operations/{op['id']}").json()["state"] == "completed"
    assert fabric.clock.now() == remove_at


def test_advance_by_zero_fires_what_is_due_now(client: TestClient, submit: Submit) -> None:
    submit("hardware-failure", "web-0")
    assert client.post(f"{API}/clock/advance", json={"seconds": 0}).json()["now"] == T0


def test_advancing_a_real_clock_is_a_conflict() -> None:
    fabric = make_fabric(clock=Clock.real())
    client = TestClient(ControlApp(fabric).asgi)
    assert client.get(f"{API}/clock").json()["virtual"] is False
    events, start = fabric.events(), fabric.clock.now()
    response = client.post(f"{API}/clock/advance", json={"seconds": 3600})
    assert response.status_code == 409
    assert "virtual clock" in response.json()["error"]
    assert fabric.events() == events
    assert fabric.clock.now() - start < 60


def test_time_scale_shows_in_the_clock() -> None:
    client = TestClient(ControlApp(make_fabric(time_scale=60)).asgi)
    assert client.get(f"{API}/clock").json()["time_scale"] == 60


# ------------------------------------------------------------------ history


@pytest.fixture
def ops(submit: Submit, client: TestClient) -> list[dict[str, Any]]:
    """Two operations, one of them carried through to its end."""
    made = [submit("user-reboot", "web-0"), submit("host-update", "host-3")]
    client.post(f"{API}/events/{made[0]['event_ids'][0]}/start", headers=JSON)
    client.post(f"{API}/events/{made[0]['event_ids'][0]}/complete", headers=JSON)
    return made


def history(client: TestClient, **params: Any) -> list[dict[str, Any]]:
    response = client.get(f"{API}/history", params=params)
    assert response.status_code == 200, response.text
    out: list[dict[str, Any]] = response.json()
    return out


def test_history_lists_every_transition_in_order(
    client: TestClient, ops: list[dict[str, Any]]
) -> None:
    entries = history(client)
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    assert [e["kind"] for e in entries if e["operation_id"] == ops[0]["id"]] == [
        "operation.created",
        "event.scheduled",
        "operation.started",
        "event.started",
        "event.completed",
        "operation.completed",
    ]
    assert {e["at"] for e in entries} == {T0}
    assert set(entries[0]) == {
        "seq",
        "at",
        "kind",
        "scope_id",
        "operation_id",
        "event_id",
        "detail",
    }


def test_history_after_and_limit_page_through_it(
    client: TestClient, ops: list[dict[str, Any]]
) -> None:
    entries = history(client)
    assert history(client, after=3) == entries[3:]
    assert history(client, limit=2) == entries[:2]
    assert history(client, after=2, limit=3) == entries[2:5]
    assert history(client, after=len(entries)) == []
    assert history(client, limit=0) == []


@pytest.mark.parametrize("field", ["event_id", "operation_id"])
def test_history_filters_by_event_and_operation(
    client: TestClient, ops: list[dict[str, Any]], field: str
) -> None:
    entries = history(client)
    for op in ops:
        wanted = op["event_ids"][-1] if field == "event_id" else op["id"]
        filtered = history(client, **{field: wanted})
        assert filtered
        assert filtered == [e for e in entries if e[field] == wanted]


@pytest.mark.parametrize("param", ["after", "limit"])
@pytest.mark.parametrize("value", ["ten", "1.5", ""])
def test_history_rejects_non_integer_parameters(
    client: TestClient, fabric: Fabric, param: str, value: str
) -> None:
    before = observe(fabric)
    response = client.get(f"{API}/history", params={param: value})
    assert response.status_code == 400
    assert response.json() == {"error": f"query parameter {param} must be an integer"}
    assert observe(fabric) == before
