"""Operations: create (target resolution, explicit targets, overrides, rolling), list, get."""

# ruff: noqa: E501  (tables of cases read best one case per line)

from __future__ import annotations

from typing import Any

import pytest

from forewarn.contract import SUPPORTED_VERSIONS
from forewarn.control import ControlApp
from forewarn.fabric import Fabric
from tests.control.conftest import API, TestClient, create
from tests.support.fabrics import T0, make_fabric

#: body -> (target, vms, rolling).
TARGETS = [
    ({"kind": "user-reboot", "target": "web-0"}, ("vm web-0", ["web-0"], False)),
    ({"kind": "user-reboot", "target": "Web-0"}, ("vm web-0", ["web-0"], False)),
    ({"kind": "host-update", "target": "host-2"}, ("host host-2", ["web-1", "web-4", "workers_2", "FrontEnd_IN_1"], False)),
    ({"kind": "platform-reboot", "target": "web"}, ("scope web", ["web-0", "web-3"], True)),
    ({"kind": "host-update", "target": "shop"}, ("scope shop", ["FrontEnd_IN_0", "BackEnd_IN_0"], True)),
    # "jumpbox" is a VM and a scope: VMs are looked up first.
    ({"kind": "host-update", "target": "jumpbox"}, ("vm jumpbox", ["jumpbox"], False)),
    ({"kind": "live-migration", "vms": ["web-0", "web-1"]}, ("vm web-0,web-1", ["web-0", "web-1"], False)),
    ({"kind": "spot-eviction", "vms": ["workers_0"]}, ("vm workers_0", ["workers_0"], False)),
    ({"kind": "host-update", "host": "host-3"}, ("host host-3", ["web-2", "web-5", "workers_3", "BackEnd_IN_0"], False)),
    ({"kind": "platform-redeploy", "scope": "workers"}, ("scope workers", ["workers_0", "workers_2"], True)),
]  # fmt: skip


@pytest.mark.parametrize(("body", "expected"), TARGETS, ids=[str(b) for b, _ in TARGETS])
def test_create_resolves_the_target(
    client: TestClient, body: dict[str, Any], expected: tuple[str, list[str], bool]
) -> None:
    target, vms, rolling = expected
    op = create(client, **body)
    assert (op["kind"], op["target"], op["vms"]) == (body["kind"], target, vms)
    assert op["id"].startswith("op-")
    assert (op["rollout_id"] is not None) == rolling
    assert (op["state"], op["created_at"]) == ("scheduled", T0)
    listed = client.get(f"{API}/events").json()
    assert [e["id"] for e in listed] == op["event_ids"]
    assert sorted(vm for e in listed for vm in e["resources"]) == sorted(vms)
    assert {e["operation_id"] for e in listed} == {op["id"]}


def test_create_answers_201_with_the_operation(client: TestClient) -> None:
    response = client.post(f"{API}/operations", json={"kind": "user-reboot", "target": "web-0"})
    assert response.status_code == 201
    assert response.headers["content-type"] == "application/json"
    op = response.json()
    assert set(op) == {
        "id",
        "kind",
        "target",
        "vms",
        "state",
        "created_at",
        "not_before",
        "started_at",
        "ended_at",
        "remove_at",
        "event_ids",
        "unnotified",
        "rollout_id",
        "via",
    }
    assert op["via"] == "control"
    assert (op["not_before"], op["started_at"], op["ended_at"]) == (T0 + 900, None, None)
    assert op["unnotified"] == []


def test_overrides_show_in_the_event_and_the_document(client: TestClient) -> None:
    op = create(
        client,
        kind="host-update",
        target="web-3",
        notice_seconds=1234.5,
        description="Patch Tuesday",
        duration_seconds=42,
    )
    (event,) = client.get(f"{API}/events").json()
    assert op["not_before"] == event["not_before"] == T0 + 1234.5
    assert (event["description"], event["duration_seconds"]) == ("Patch Tuesday", 42)
    document = client.get(
        f"{API}/documents/web-3", params={"api-version": SUPPORTED_VERSIONS[-1]}
    ).json()
    (wire,) = document["Events"]
    assert (wire["Description"], wire["DurationInSeconds"]) == ("Patch Tuesday", 42)
    assert wire["NotBefore"] == "Tue, 14 Nov 2023 22:33:54 GMT"


def test_created_started_operation_needs_no_notice(client: TestClient) -> None:
    op = create(client, kind="hardware-failure", target="web-2")
    assert (op["state"], op["started_at"], op["not_before"]) == ("started", T0, T0)
    (event,) = client.get(f"{API}/events").json()
    assert (event["status"], event["not_before"]) == ("Started", None)


def test_scope_target_walks_update_domains_with_the_same_overrides(
    client: TestClient, fabric: Fabric
) -> None:
    first = create(
        client, kind="platform-reboot", target="web", notice_seconds=1000, description="Rolling"
    )
    for _ in range(5):
        ops = client.get(f"{API}/operations").json()
        current = ops[-1]
        assert current["rollout_id"] == first["rollout_id"]
        assert current["not_before"] - current["created_at"] == 1000
        assert {e["description"] for e in client.get(f"{API}/events").json()} == {"Rolling"}
        # the batch starts at NotBefore; its events are held, then removed
        hold = fabric.operation(current["id"]).hold_seconds
        for seconds in (1000, hold):
            assert client.post(f"{API}/clock/advance", json={"seconds": seconds}).status_code == 200
        assert client.get(f"{API}/operations/{current['id']}").json()["state"] == "completed"
        if len(client.get(f"{API}/operations").json()) == len(ops):
            break
    batches = [op["vms"] for op in client.get(f"{API}/operations").json()]
    assert batches == [["web-0", "web-3"], ["web-1", "web-4"], ["web-2", "web-5"]]
    assert client.get(f"{API}/events").json() == []
    assert [r.done for r in fabric.rollouts()] == [True]


def test_operations_list_oldest_first_and_get_one(client: TestClient) -> None:
    made = [
        create(client, kind="user-reboot", target="web-0"),
        create(client, kind="host-update", target="host-1"),
        create(client, kind="spot-eviction", target="workers_1"),
    ]
    listed = client.get(f"{API}/operations").json()
    assert listed == made
    for op in made:
        response = client.get(f"{API}/operations/{op['id']}")
        assert response.status_code == 200
        assert response.json() == op


def test_operations_list_is_empty_at_first(client: TestClient) -> None:
    assert client.get(f"{API}/operations").json() == []


def test_vms_of_scopes_that_never_asked_are_listed_as_unnotified() -> None:
    fabric = make_fabric(enablement="on-first-request")
    fabric.note_request(fabric.topology.vms["web-1"])
    client = TestClient(ControlApp(fabric).asgi)
    op = create(client, kind="host-update", target="host-2")
    assert op["unnotified"] == ["workers_2", "FrontEnd_IN_1"]
    assert len(op["event_ids"]) == 1  # only scope web, which asked, gets an event
