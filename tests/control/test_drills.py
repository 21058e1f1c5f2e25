"""Repeatable drills through the control API: a fleet reset, and injected endpoint faults
(created, listed, cleared), with hostile input refused and nothing changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from forewarn.control import ControlApp
from forewarn.fabric import Clock, Fabric
from forewarn.imds import Endpoint, ImdsSettings, Request
from forewarn.store import SQLiteStore
from tests.control.conftest import API, JSON, TestClient, create, observe
from tests.support.fabrics import make_fabric


def drill(fabric: Fabric) -> tuple[TestClient, Endpoint]:
    """The control API and the endpoint sharing one fault book, as the server wires them."""
    endpoint = Endpoint(fabric, ImdsSettings(rate_limit=None))
    return TestClient(ControlApp(fabric, faults=endpoint.faults).asgi), endpoint


def poll(endpoint: Endpoint, vm: str = "web-0") -> tuple[int, bytes]:
    address = endpoint.fabric.topology.vms[vm].address
    reply = endpoint.handle(
        Request("GET", "/metadata/scheduledevents", b"api-version=2020-07-01",
                [(b"metadata", b"true")], address, None)
    )  # fmt: skip
    return reply.status, reply.body


def evict_every_spot_vm(client: TestClient, fabric: Fabric) -> list[str]:
    spots = [vm.name for vm in fabric.topology.vms.values() if vm.spot]
    for name in spots:
        create(client, kind="spot-eviction", target=name)
    fabric.advance(3600)
    assert all(fabric.is_deleted(name) for name in spots)
    return spots


# ------------------------------------------------------------------------- reset


def test_reset_brings_deleted_vms_back_clears_events_and_keeps_history(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "f.db")
    fabric = make_fabric(store=store)
    client, endpoint = drill(fabric)
    spots = evict_every_spot_vm(client, fabric)
    create(client, kind="user-reboot", target="web-0")
    before = {sid: fabric.view(sid).incarnation for sid in fabric.topology.scopes}
    history_before = len(fabric.history(limit=100_000))
    assert poll(endpoint, spots[0])[0] == 404  # an evicted VM is gone from the endpoint

    response = client.post(f"{API}/fleet/reset", headers=JSON)
    assert response.status_code == 200, response.text
    out = response.json()
    assert out["restored_vms"] == sorted(spots) and out["events"] == 1
    assert out["operations"] == len(spots) + 1 and out["live_operations"] == 1
    assert fabric.events() == [] and fabric.operations() == []
    assert not any(fabric.is_deleted(name) for name in spots)
    # every VM sees a new document, with a higher incarnation
    for sid, incarnation in before.items():
        assert out["incarnations"][sid] == fabric.view(sid).incarnation == incarnation + 1
    status, body = poll(endpoint, spots[0])
    assert status == 200 and b'"Events":[]' in body
    history = fabric.history(limit=100_000)
    assert len(history) == history_before + 1 and history[-1].kind == "fleet.reset"
    assert client.get(f"{API}/vms").json()[0]["status"] == "running"

    # a restart on the same database shows the reset fleet, incarnations never go back
    fabric.close()
    store.close()
    later = Clock.virtual(start=fabric.clock.now())
    again = make_fabric(clock=later, store=SQLiteStore(tmp_path / "f.db"))
    assert again.events() == [] and again.operations() == []
    assert not any(again.is_deleted(name) for name in spots)
    after = {sid: again.view(sid).incarnation for sid in again.topology.scopes}
    assert after == out["incarnations"]


def test_spot_eviction_is_possible_again_after_a_reset(fabric: Fabric) -> None:
    client, _ = drill(fabric)
    spots = evict_every_spot_vm(client, fabric)
    refused = client.post(f"{API}/operations", json={"kind": "spot-eviction", "target": spots[0]})
    assert refused.status_code in (400, 404), refused.text
    assert client.post(f"{API}/fleet/reset", headers=JSON, content=b"{}").status_code == 200
    op = create(client, kind="spot-eviction", target=spots[0])
    assert op["vms"] == [spots[0]] and len(op["event_ids"]) == 1


@pytest.mark.parametrize(
    ("content", "headers", "status"),
    [
        (b'{"all": true}', JSON, 400),  # no options
        (b"{", JSON, 400),
        (b'"\xff"', JSON, 400),
        (b"{}", {"Content-Type": "text/plain"}, 415),  # what a cross-site form sends
    ],
)
def test_reset_refuses_bad_requests_and_changes_nothing(
    fabric: Fabric, content: bytes, headers: dict[str, str], status: int
) -> None:
    client, _ = drill(fabric)
    create(client, kind="user-reboot", target="web-0")
    before = observe(fabric)
    response = client.post(f"{API}/fleet/reset", content=content, headers=headers)
    assert response.status_code == status and "error" in response.json()
    assert observe(fabric) == before


def test_reset_needs_the_token_like_every_change(fabric: Fabric) -> None:
    client = TestClient(ControlApp(fabric, token="s3cret").asgi)
    create_ok = client.post(f"{API}/fleet/reset", headers=JSON)
    assert create_ok.status_code == 401
    ok = client.post(f"{API}/fleet/reset", headers={**JSON, "Authorization": "Bearer s3cret"})
    assert ok.status_code == 200


# ------------------------------------------------------------------------ faults


def add(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post(f"{API}/faults", json=body)
    assert response.status_code == 201, response.text
    fault: dict[str, Any] = response.json()
    return fault


def test_a_fault_is_created_listed_hits_requests_and_is_cleared(fabric: Fabric) -> None:
    client, endpoint = drill(fabric)
    assert not endpoint.faults.active and poll(endpoint)[0] == 200
    fault = add(client, kind="status", status=410, vm="web-0", duration_seconds=70)
    assert (fault["kind"], fault["status"], fault["vm"]) == ("status", 410, "web-0")
    assert fault["ends_at"] - fault["starts_at"] == 70
    assert poll(endpoint) == (410, b'{"error":"Gone"}')
    assert poll(endpoint, "web-1")[0] == 200  # another VM: untouched
    [listed] = client.get(f"{API}/faults").json()
    assert listed["id"] == fault["id"] and listed["hits"] == 1
    gone = client.delete(f"{API}/faults/{fault['id']}", headers=JSON)
    assert gone.status_code == 200 and gone.json()["hits"] == 1
    assert client.get(f"{API}/faults").json() == []
    assert not endpoint.faults.active and poll(endpoint)[0] == 200


def test_a_window_of_platform_time_ends_by_itself(fabric: Fabric) -> None:
    client, endpoint = drill(fabric)
    add(client, kind="status", status=503, scope="web", after_seconds=10, duration_seconds=60)
    assert poll(endpoint)[0] == 200  # not started yet
    fabric.advance(10)
    assert poll(endpoint) == (503, b'{"error":"Service unavailable"}')
    assert poll(endpoint, "jumpbox")[0] == 200  # another scope
    fabric.advance(60)
    assert poll(endpoint)[0] == 200
    assert client.get(f"{API}/faults").json() == [] and not endpoint.faults.active


def test_clearing_every_fault(fabric: Fabric) -> None:
    client, endpoint = drill(fabric)
    add(client, kind="status", status=500)
    add(client, kind="latency", latency_seconds=2, share=0.5)
    response = client.delete(f"{API}/faults", headers=JSON)
    assert response.status_code == 200 and len(response.json()) == 2
    assert poll(endpoint)[0] == 200 and not endpoint.faults.active


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"kind": "status", "status": 418}, 400, "status"),
        ({"kind": "status"}, 400, "needs status"),
        ({"kind": "latency", "latency_seconds": -1}, 400, "latency_seconds"),
        ({"kind": "latency", "latency_seconds": 1e9}, 400, "latency_seconds"),
        ({"kind": "timeout", "duration_seconds": -5}, 400, "duration_seconds"),
        ({"kind": "timeout", "after_seconds": -1}, 400, "after_seconds"),
        ({"kind": "timeout", "share": 0}, 400, "share"),
        ({"kind": "timeout", "share": 1.5}, 400, "share"),
        ({"kind": "timeout", "status": 500}, 400, "only for status"),
        ({"kind": "cotenant"}, 400, "needs rate"),
        ({"kind": "cotenant", "rate": 3, "share": 0.5}, 400, "share"),
        ({"kind": "reset", "vm": "web-0", "scope": "web"}, 400, "not both"),
        ({"kind": "reset", "vm": "nope"}, 404, "nope"),
        ({"kind": "reset", "scope": "nope"}, 404, "nope"),
        ({"kind": "explode"}, 400, "kind"),
        ({"kind": "reset", "extra": 1}, 400, "extra"),
        ({"kind": "reset", "vm": "x" * 300}, 400, "vm"),
    ],
)
def test_bad_faults_get_a_clear_error_and_change_nothing(
    fabric: Fabric, body: dict[str, Any], status: int, says: str
) -> None:
    client, endpoint = drill(fabric)
    response = client.post(f"{API}/faults", json=body)
    assert response.status_code == status, response.text
    assert says in response.json()["error"]
    assert client.get(f"{API}/faults").json() == [] and not endpoint.faults.active


@pytest.mark.parametrize(
    ("content", "headers", "status"),
    [
        (b"x" * 100_000, JSON, 400),
        (b"{", JSON, 400),
        (b'{"kind": "\xff"}', JSON, 400),
        (b"", JSON, 400),
        (b'{"kind": "reset"}', {"Content-Type": "text/plain"}, 415),
    ],
)
def test_malformed_fault_bodies_are_refused(
    fabric: Fabric, content: bytes, headers: dict[str, str], status: int
) -> None:
    client, endpoint = drill(fabric)
    response = client.post(f"{API}/faults", content=content, headers=headers)
    assert response.status_code == status and "error" in response.json()
    assert not endpoint.faults.active


def test_clearing_an_unknown_fault_is_404_and_delete_needs_json(fabric: Fabric) -> None:
    client, _ = drill(fabric)
    add(client, kind="reset")
    assert client.delete(f"{API}/faults/fault-999", headers=JSON).status_code == 404
    assert client.delete(f"{API}/faults").status_code == 415  # no Content-Type: a form
    assert len(client.get(f"{API}/faults").json()) == 1


def test_fault_routes_are_in_the_openapi_document(fabric: Fabric) -> None:
    client, _ = drill(fabric)
    doc = client.get("/openapi.json").json()
    assert set(doc["paths"]["/api/v1/faults"]) == {"get", "post", "delete"}
    assert "post" in doc["paths"]["/api/v1/fleet/reset"]
    assert "FaultBody" in doc["components"]["schemas"]


def test_a_cotenant_eats_the_rate_budget(fabric: Fabric) -> None:
    """5 requests/s per VM; a co-tenant polling 4.5 times a second leaves the VM a burst
    of one request, then 429s with the endpoint's body."""
    client, endpoint = drill(fabric)
    add(client, kind="cotenant", vm="web-0", rate=4.5)
    answers = [poll(endpoint) for _ in range(5)]
    assert answers[0][0] == 200
    assert answers[1:] == [(429, b'{"error":"Too many requests"}')] * 4
    assert poll(endpoint, "web-1")[0] == 200


def test_a_share_of_requests(fabric: Fabric) -> None:
    fabric_endpoint = Endpoint(fabric, ImdsSettings(rate_limit=None))
    draws = iter([0.1, 0.9, 0.2, 0.7] * 10)
    fabric_endpoint.faults._draw = lambda: next(draws)
    client = TestClient(ControlApp(fabric, faults=fabric_endpoint.faults).asgi)
    add(client, kind="status", status=500, share=0.5)
    statuses = [poll(fabric_endpoint)[0] for _ in range(4)]
    assert statuses == [500, 200, 500, 200]


def test_no_fault_by_default(fabric: Fabric) -> None:
    endpoint = Endpoint(fabric)
    assert endpoint.faults.active is False
    assert endpoint.faults.faults() == []
