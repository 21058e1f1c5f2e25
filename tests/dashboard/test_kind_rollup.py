"""The dashboard's fleet rolled up by region and scope kind (issue 39): the snapshot's
totals are the fleet's, counted VM by VM here; each kind holds its worst 50 scopes only,
whatever the scopes; ``GET /api/v1/dashboard/scopes`` pages every scope of a kind in the
same order, filters by name, and refuses bad parameters with a 400 naming them; a tick
names at most 100 scopes where a VM moved, and counts them all."""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec
import pytest

from forewarn.control import ControlApp
from forewarn.control.dashboard import Hub
from forewarn.fabric import Fabric, OperationRequest
from forewarn.fleet.names import natural
from tests.control.conftest import TestClient
from tests.support.fabrics import fleet, make_fabric

SETS = "availability_set"


def _fleet(sets: int = 130) -> Fabric:
    """A scale set of 2,000 VMs in 40 placement groups, and ``sets`` availability sets of
    10 VMs, some polling, some gone silent, some not running, some in live events."""
    fabric = make_fabric(fleet(
        {"kind": "scale_set", "name": "big", "vms": 2000, "placement_groups": 40},
        *({"kind": SETS, "name": f"as{k}", "vms": 10, "update_domains": 5} for k in range(sets)),
    ))  # fmt: skip
    names = list(fabric.topology.vms)
    for name in names[::3]:
        fabric.note_request(fabric.topology.vms[name])
    fabric.advance(90)  # those polls are now silent
    for name in names[::7]:
        fabric.note_request(fabric.topology.vms[name])
    fabric.submit(OperationRequest(kind="hardware-failure", vms=("as17-2", "as99-0", "big_5")))
    fabric.submit(OperationRequest(kind="user-reboot", vms=("as40-1",)))  # notice: running
    fabric.submit(OperationRequest(kind="hardware-failure", vms=("as61-3", "as61-4")))
    return fabric


def _counted(fabric: Fabric) -> dict[str, dict[str, Any]]:
    """Each scope counted VM by VM: kind, VMs, not running by state, polled, silent, events."""
    now, statuses, polls = fabric.clock.now(), fabric.vm_statuses(), fabric.last_requests
    events = Counter(e.scope_id for e in fabric.events())
    out: dict[str, dict[str, Any]] = {}
    for name, vm in fabric.topology.vms.items():
        kind = fabric.topology.scopes[vm.scope_id].kind.value
        row = out.setdefault(vm.scope_id, {"region": vm.location, "kind": kind, "vms": 0,
                                           "states": Counter(), "polled": 0, "silent": 0,
                                           "events": events[vm.scope_id]})  # fmt: skip
        row["vms"] += 1
        if statuses.get(name, "running") != "running":
            row["states"][statuses[name]] += 1
        if name in polls:
            row["polled"] += 1
            row["silent"] += polls[name] <= now - 60
    return out


def _worst_first(counted: dict[str, dict[str, Any]], kind: str) -> list[str]:
    """The scopes of ``kind``: live events, VMs not running, silent (the more the earlier),
    then by name as people count."""
    rows = {sid: r for sid, r in counted.items() if r["kind"] == kind}
    return sorted(rows, key=lambda s: (-rows[s]["events"], -rows[s]["states"].total(),
                                       -rows[s]["silent"], natural(s)))  # fmt: skip


def _client(fabric: Fabric) -> TestClient:
    return TestClient(ControlApp(fabric).asgi)


def test_kind_totals_are_the_fleet_s_counted_vm_by_vm_and_50_scopes_each_worst_first() -> None:
    fabric = _fleet()
    snap = _client(fabric).get("/api/v1/dashboard").json()
    counted = _counted(fabric)
    assert [(k["region"], k["kind"]) for k in snap["kinds"]] == [
        ("westeurope", SETS), ("westeurope", "scale_set"),
    ]  # fmt: skip
    for kind in snap["kinds"]:
        rows = [r for r in counted.values() if r["kind"] == kind["kind"]]
        states: Counter[str] = sum((r["states"] for r in rows), Counter())
        assert {k: v for k, v in kind.items() if k != "worst"} == {
            "region": "westeurope", "kind": kind["kind"], "scopes": len(rows),
            "vms": sum(r["vms"] for r in rows), "states": dict(states),
            "polled": sum(r["polled"] for r in rows), "silent": sum(r["silent"] for r in rows),
            "events": sum(r["events"] for r in rows),
        }  # fmt: skip
        assert [s["id"] for s in kind["worst"]] == _worst_first(counted, kind["kind"])[:50]
        for s in kind["worst"]:
            want = counted[s["id"]]
            assert (s["vms"], s["states"], s["polled"], s["silent"]) == (
                want["vms"], dict(want["states"]), want["polled"], want["silent"])  # fmt: skip
    sets = snap["kinds"][0]
    assert (sets["scopes"], len(sets["worst"])) == (130, 50)
    assert sets["states"] == {"redeploying": 4} and sets["events"] == 5  # as61: one a VM
    # as61 (two VMs redeploying) leads; then one each, in name order; as40's reboot waits
    # for its notice (a live event, every VM running) and comes after those.
    assert [s["id"] for s in sets["worst"][:4]] == ["as61", "as17", "as99", "as40"]
    assert sets["polled"] > sets["silent"] > 0


def test_the_snapshot_holds_50_scopes_a_kind_at_twice_the_scopes() -> None:
    bodies = [_client(_fleet(sets)).get("/api/v1/dashboard") for sets in (130, 260)]
    small, big = (b.json() for b in bodies)
    assert [k["scopes"] for k in big["kinds"]] == [260, 40]
    assert [len(k["worst"]) for k in small["kinds"]] == [len(k["worst"]) for k in big["kinds"]]
    assert len(bodies[1].content) - len(bodies[0].content) < 300  # the counts' digits


def test_a_kind_s_scopes_page_on_in_the_snapshot_s_order() -> None:
    fabric = _fleet()
    client = _client(fabric)
    order = _worst_first(_counted(fabric), SETS)
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = client.get("/api/v1/dashboard/scopes", params={
            "region": "westeurope", "kind": SETS, "offset": offset, "limit": 17,
        }).json()  # fmt: skip
        assert (page["total"], page["region"], page["kind"]) == (130, "westeurope", SETS)
        seen += [s["id"] for s in page["scopes"]]
        offset = page["next"]
    assert seen == order
    snap = client.get("/api/v1/dashboard").json()
    assert [s["id"] for s in snap["kinds"][0]["worst"]] == order[:50]
    after = client.get(f"/api/v1/dashboard/scopes?kind={SETS}&offset=50&limit=1000").json()
    assert [s["id"] for s in after["scopes"]] == order[50:] and after["next"] is None
    every = client.get("/api/v1/dashboard/scopes?limit=1000").json()
    assert every["total"] == 170 and every["scopes"][0]["id"] == "as61"  # any kind
    assert client.get("/api/v1/dashboard/scopes").json()["limit"] == 50


def test_a_filter_finds_scopes_by_name_in_any_kind_worst_first() -> None:
    fabric = _fleet()
    client = _client(fabric)
    named = client.get("/api/v1/dashboard/scopes?q=AS1&limit=5").json()
    holding = [s for s in _worst_first(_counted(fabric), SETS) if "as1" in s]
    assert named["total"] == len(holding) == 41  # as1, as10-as19, as100-as129
    assert [s["id"] for s in named["scopes"]] == holding[:5] and named["next"] == 5
    assert named["scopes"][0]["id"] == "as17"  # its VM redeploying
    groups = client.get("/api/v1/dashboard/scopes?q=pg3&kind=scale_set").json()
    pg3 = [s for s in _worst_first(_counted(fabric), "scale_set") if "pg3" in s]
    assert [s["id"] for s in groups["scopes"]] == pg3
    assert sorted(pg3) == sorted(["big/pg3", *(f"big/pg3{k}" for k in range(10))])
    nothing = client.get("/api/v1/dashboard/scopes?q=nowhere&region=westeurope").json()
    assert (nothing["total"], nothing["scopes"], nothing["next"]) == (0, [], None)


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ("region=", "query parameter region is empty; name a region or omit it"),
        ("region=eastus", "query parameter region: no region 'eastus' in this fleet "
                          "(its regions: westeurope)"),
        ("kind=", "query parameter kind is empty; name a kind or omit it"),
        ("kind=vm", "query parameter kind takes one of standalone, availability_set, "
                    "scale_set, cloud_service"),
        ("limit=0", "query parameter limit must be a whole number from 1 to 1000, not '0'"),
        ("limit=1001", "query parameter limit must be a whole number from 1 to 1000, "
                       "not '1001'"),
        ("offset=-1", "query parameter offset must be a whole number from 0 to 1000000000, "
                      "not '-1'"),
        ("offset=x", "query parameter offset must be a whole number from 0 to 1000000000, "
                     "not 'x'"),
        ("q=" + "x" * 201, "query parameter q is longer than 200 characters"),
        ("scope=as1", "unknown query parameter 'scope' (this route takes: kind, limit, "
                      "offset, q, region)"),
    ],
)  # fmt: skip
def test_a_bad_page_of_scopes_is_a_400_saying_which_parameter(query: str, error: str) -> None:
    bad = _client(make_fabric()).get(f"/api/v1/dashboard/scopes?{query}")
    assert bad.status_code == 400 and bad.json() == {"error": error}


async def test_a_tick_names_100_scopes_that_moved_and_counts_them_all() -> None:
    fabric = make_fabric(fleet(*(
        {"kind": SETS, "name": f"s{k:03}", "vms": 2, "update_domains": 2} for k in range(250)
    )))  # fmt: skip
    hub = Hub(fabric)
    await hub.tick_message()
    for k in range(150):
        fabric.note_request(fabric.topology.vms[f"s{k:03}-0"])
    tick = await hub.tick_message()
    assert tick["moved"] == [f"s{k:03}" for k in range(100)] and tick["moved_total"] == 150
    assert [(k["scopes"], k["polled"]) for k in tick["kinds"]] == [(250, 150)]
    assert len(msgspec.json.encode(tick)) < 1500  # 150 scopes moved: 100 names, one kind
    quiet = await hub.tick_message()
    assert (quiet["kinds"], quiet["moved"], quiet["moved_total"]) == ([], [], 0)
    hub.close()
