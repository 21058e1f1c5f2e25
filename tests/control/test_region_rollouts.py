"""A region rollout through the control API: ``region: true`` on ``POST /operations``,
its progress under ``/rollouts``, bad bodies refused with nothing changed."""

# ruff: noqa: E501  (a table of cases reads best one case per line)

from __future__ import annotations

from typing import Any

import pytest

from forewarn.fabric import Fabric
from tests.control.conftest import API, TestClient, create, observe, reported_app


def test_a_region_rollout_starts_with_its_first_wave(client: TestClient, fabric: Fabric) -> None:
    op = create(client, kind="platform-reboot", region=True, wave_hosts=2)
    assert (op["target"], sorted(op["vms"])) == ("region", ["FrontEnd_IN_0", "web-0", "workers_2"])
    events = client.get(f"{API}/events").json()
    assert {e["operation_id"] for e in events} == {op["id"]}
    (rollout,) = client.get(f"{API}/rollouts").json()
    assert rollout == {
        "id": op["rollout_id"], "kind": "platform-reboot", "target": "region", "region": True,
        "batch": 1, "batches": 5, "wave_hosts": 2, "current_operation": op["id"],
        "events": len(events), "done": False,
    }  # fmt: skip
    assert client.get(f"{API}/rollouts/{op['rollout_id']}").json() == rollout
    history = client.get(f"{API}/history").json()
    created = [h for h in history if h["kind"] == "rollout.created"]
    assert created[0]["detail"] == {
        "id": op["rollout_id"], "kind": "platform-reboot", "region": True, "waves": 5,
        "wave_hosts": 2,
    }  # fmt: skip
    client.post(f"{API}/clock/advance", json={"seconds": 25 * 60})  # wave 1 done at 25 min
    assert client.get(f"{API}/rollouts").json()[0]["batch"] == 2


def test_a_scope_rollout_is_listed_too(client: TestClient) -> None:
    op = create(client, kind="host-update", scope="web")
    (rollout,) = client.get(f"{API}/rollouts").json()
    assert (rollout["target"], rollout["region"], rollout["batch"], rollout["batches"]) == (
        "scope web", False, 1, 3,
    )  # fmt: skip
    assert (rollout["wave_hosts"], rollout["events"], rollout["current_operation"]) == (
        None, None, op["id"],
    )  # fmt: skip


def test_an_unknown_rollout_is_404(client: TestClient) -> None:
    response = client.get(f"{API}/rollouts/rollout-nope")
    assert response.status_code == 404
    assert response.json() == {"error": "no rollout with id 'rollout-nope'"}


BAD = [
    ({"kind": "user-reboot", "region": True}, "user-reboot is a user operation; name a VM, not the region"),
    ({"kind": "degraded-hardware", "region": True}, "degraded-hardware does not roll out over a region"),
    ({"kind": "host-update", "region": True, "wave_hosts": 0}, "wave_hosts"),
    ({"kind": "host-update", "region": True, "wave_hosts": 10_001}, "wave_hosts"),
    ({"kind": "host-update", "region": True, "wave_hosts": "ten"}, "wave_hosts"),
    ({"kind": "host-update", "region": False}, "region takes true"),
    ({"kind": "host-update", "region": True, "scope": "web"}, "name exactly one target"),
    ({"kind": "host-update", "region": True, "target": "web"}, "give either target or region, not both"),
    ({"kind": "host-update", "scope": "web", "wave_hosts": 4}, "wave_hosts is only for a region rollout"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "message"), BAD, ids=[str(b) for b, _ in BAD])
def test_a_bad_region_request_is_400_and_changes_nothing(
    client: TestClient, fabric: Fabric, body: dict[str, Any], message: str
) -> None:
    before = observe(fabric)
    response = client.post(f"{API}/operations", json=body)
    assert response.status_code == 400, response.text
    assert message in response.json()["error"]
    assert observe(fabric) == before


def test_a_second_region_rollout_is_409(client: TestClient, fabric: Fabric) -> None:
    create(client, kind="host-update", region=True)
    before = observe(fabric)
    response = client.post(f"{API}/operations", json={"kind": "platform-reboot", "region": True})
    assert response.status_code == 409
    assert "a region rollout is already under way" in response.json()["error"]
    assert observe(fabric) == before


def test_the_report_rolls_a_region_rollout_up_as_one_operation_by_wave() -> None:
    app = reported_app()
    client = TestClient(app.asgi)
    op = create(client, kind="host-update", region=True, wave_hosts=2)
    client.post(f"{API}/clock/advance", json={"seconds": 25 * 60})  # wave 2 under way
    report = client.get(f"{API}/reactions").json()
    (rollup,) = [o for o in report["operations"] if o["id"] == op["rollout_id"]]
    assert (rollup["kind"], rollup["target"]) == ("host-update", "region")
    assert rollup["progress"].startswith("wave 2 of 5, "), rollup["progress"]
