"""The trigger form's suggestions (issue 39): GET /api/v1/dashboard/targets answers the
VMs, hosts and scopes whose name starts with what a user typed, a few at a time, each
kind given its turn, with how many matched in all; bad parameters are 400s naming them.
"""

from __future__ import annotations

import pytest

from forewarn.control import ControlApp
from forewarn.fabric import Fabric
from tests.control.conftest import TestClient
from tests.support.fabrics import fleet, make_fabric

SETS = 20
PER_SET = 200  # 4,000 VMs made from a count


def _counted() -> Fabric:
    scopes = [{"kind": "availability_set", "name": f"set{k}", "vms": PER_SET,
               "update_domains": 5} for k in range(SETS)]  # fmt: skip
    return make_fabric(fleet(*scopes))


def _client(fabric: Fabric) -> TestClient:
    return TestClient(ControlApp(fabric).asgi)


def _names(fabric: Fabric) -> dict[str, list[str]]:
    """Every name a target can be, by kind (the brute force the index must agree with)."""
    topology = fabric.topology
    return {"vm": list(topology.vms), "host": list(topology.vms.host_index()),
            "scope": list(topology.scopes)}  # fmt: skip


def _expected(fabric: Fabric, q: str) -> dict[str, int]:
    return {kind: sum(n.lower().startswith(q.lower()) for n in names)
            for kind, names in _names(fabric).items()}  # fmt: skip


def test_a_small_fleet_suggests_the_vm_host_or_scope_typed() -> None:
    fabric = make_fabric()  # the demo fleet: VMs written out one by one
    client = _client(fabric)
    found = client.get("/api/v1/dashboard/targets?q=web-0").json()
    assert found["targets"][0] == {"name": "web-0", "kind": "vm", "detail": "VM in web"}
    assert found["total"] == sum(_expected(fabric, "web-0").values())
    web = client.get("/api/v1/dashboard/targets?q=WEB").json()  # ignoring case
    assert web["targets"][0]["name"] == "web" and web["targets"][0]["kind"] == "scope"
    assert {t["name"] for t in web["targets"] if t["kind"] == "vm"} == {
        n for n in fabric.topology.vms if n.startswith("web")
    }
    host = fabric.topology.vms["web-3"].host
    on_host = client.get(f"/api/v1/dashboard/targets?q={host}").json()
    (exact,) = [t for t in on_host["targets"] if t["name"] == host]
    count = len(fabric.topology.vms_on_host(host))
    assert exact["kind"] == "host" and exact["detail"] == f"host of {count} VMs"
    nothing = client.get("/api/v1/dashboard/targets?q=no-such-name").json()
    assert nothing == {"q": "no-such-name", "limit": 20, "total": 0,
                       "totals": {"vm": 0, "host": 0, "scope": 0}, "targets": []}  # fmt: skip


@pytest.mark.parametrize("q", ["set1", "SET3-9", "set", "host-1", "s", "set19-199", "set3-0"])
def test_a_fleet_made_from_a_count_is_matched_by_arithmetic_as_by_a_pass(q: str) -> None:
    fabric = _counted()
    found = _client(fabric).get(f"/api/v1/dashboard/targets?q={q}&limit=30").json()
    expected = _expected(fabric, q)
    assert found["totals"] == expected and found["total"] == sum(expected.values())
    assert len(found["targets"]) == min(30, found["total"])
    assert all(t["name"].lower().startswith(q.lower()) for t in found["targets"])
    by_kind = {kind: [t["name"] for t in found["targets"] if t["kind"] == kind]
               for kind in expected}  # fmt: skip
    for kind, names in by_kind.items():
        assert set(names) <= set(_names(fabric)[kind])
        if expected[kind]:
            assert names, f"every kind that matched gets a share: {kind}"


def test_the_shortest_names_come_first_and_the_limit_holds() -> None:
    client = _client(_counted())
    found = client.get("/api/v1/dashboard/targets?q=set3-9&limit=5").json()
    assert [t["name"] for t in found["targets"]] == [
        "set3-9", "set3-90", "set3-91", "set3-92", "set3-93"
    ]  # fmt: skip
    assert found["total"] == 11 and found["limit"] == 5  # set3-9, set3-90 … set3-99
    scopes = client.get("/api/v1/dashboard/targets?q=set1&kinds=scope&limit=3").json()
    assert [t["name"] for t in scopes["targets"]] == ["set1", "set10", "set11"]
    assert scopes["totals"] == {"scope": 11} and scopes["total"] == 11
    assert scopes["targets"][0]["detail"] == f"availability_set of {PER_SET} VMs"
    both = client.get("/api/v1/dashboard/targets?q=set1&kinds=vm,scope&limit=50").json()
    assert {t["kind"] for t in both["targets"]} == {"vm", "scope"}
    assert set(both["totals"]) == {"vm", "scope"}
    every = client.get("/api/v1/dashboard/targets?limit=100").json()  # q empty: any name
    assert every["total"] == sum(len(n) for n in _names(_counted()).values())
    assert len(every["targets"]) == 100


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("limit=0", "query parameter limit must be a whole number from 1 to 100"),
        ("limit=101", "query parameter limit must be a whole number from 1 to 100"),
        ("limit=ten", "query parameter limit must be a whole number from 1 to 100"),
        ("kinds=disk", "query parameter kinds must list some of vm, host, scope"),
        ("kinds=", "query parameter kinds must list some of vm, host, scope"),
        ("kinds=vm,,scope", "query parameter kinds must list some of vm, host, scope"),
        ("q=" + "x" * 201, "query parameter q is longer than 200 characters"),
    ],
)
def test_bad_parameters_are_400_naming_what_is_wrong(query: str, names: str) -> None:
    bad = _client(make_fabric()).get(f"/api/v1/dashboard/targets?{query}")
    assert bad.status_code == 400
    assert bad.json()["error"].startswith(names)


def test_the_suggestions_need_the_token() -> None:
    client = TestClient(ControlApp(make_fabric(), token="targets-token").asgi)
    assert client.get("/api/v1/dashboard/targets?q=web").status_code == 401
    allowed = client.get("/api/v1/dashboard/targets?q=web",
                         headers={"Authorization": "Bearer targets-token"})  # fmt: skip
    assert allowed.status_code == 200 and allowed.json()["totals"]["vm"] > 0
