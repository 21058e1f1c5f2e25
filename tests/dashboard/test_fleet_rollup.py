"""The dashboard's fleet rolled up (issue 39): the first payload is one row per region and
scope kind, counted, with its worst scopes, whatever the VMs per scope; a scope's VMs come
a page at a time, a search finds VMs by name or host; a tick says per kind what changed,
never per VM (the kinds themselves: tests/dashboard/test_kind_rollup.py)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from forewarn.control import ControlApp
from forewarn.control.dashboard import Hub
from forewarn.fabric import Fabric, OperationRequest
from tests.control.conftest import TestClient
from tests.support.fabrics import fleet, make_fabric

JSON = {"Content-Type": "application/json"}
SCOPES = 20


def _fleet_of(vms_per_scope: int) -> Fabric:
    """``SCOPES`` availability sets of ``vms_per_scope`` VMs each (made from a count)."""
    scopes = [{"kind": "availability_set", "name": f"set{k}", "vms": vms_per_scope,
               "update_domains": 5} for k in range(SCOPES)]  # fmt: skip
    return make_fabric(fleet(*scopes))


def _client(fabric: Fabric) -> TestClient:
    return TestClient(ControlApp(fabric).asgi)


def test_the_first_payload_is_a_row_per_kind_the_same_size_at_100_times_the_vms() -> None:
    small, big = _fleet_of(10), _fleet_of(1000)
    bodies = [_client(f).get("/api/v1/dashboard") for f in (small, big)]
    assert all(b.status_code == 200 for b in bodies)
    snapshots: list[dict[str, Any]] = [b.json() for b in bodies]
    assert [s["vms"] for s in snapshots] == [SCOPES * 10, SCOPES * 1000]
    for snap in snapshots:
        (kind,) = snap["kinds"]
        assert (kind["scopes"], len(kind["worst"])) == (SCOPES, SCOPES) and "hosts" not in snap
    assert snapshots[1]["kinds"][0]["vms"] == SCOPES * 1000
    row = snapshots[1]["kinds"][0]["worst"][3]
    assert row == {"id": "set3", "region": "westeurope", "kind": "availability_set",
                   "update_domains": 5, "incarnation": 1, "enabled": True, "vms": 1000,
                   "states": {}, "polled": 0, "silent": 0}  # fmt: skip
    # 100 times the VMs: the body grows by the digits of the counts, nothing per VM.
    sizes = [len(b.content) for b in bodies]
    assert sizes[1] - sizes[0] <= 3 * SCOPES, sizes


def test_the_counts_say_which_vms_are_not_running_polled_and_went_silent() -> None:
    fabric = _fleet_of(10)
    fabric.note_request(fabric.topology.vms["set2-0"])
    fabric.note_request(fabric.topology.vms["set2-1"])
    fabric.submit(OperationRequest(kind="hardware-failure", vms=("set2-5",)))
    fabric.advance(90)  # both polls are now a minute and a half old
    fabric.note_request(fabric.topology.vms["set2-1"])
    (kind,) = _client(fabric).get("/api/v1/dashboard").json()["kinds"]
    rows = {r["id"]: r for r in kind["worst"]}
    assert rows["set2"]["states"] == {"redeploying": 1}
    assert (rows["set2"]["polled"], rows["set2"]["silent"]) == (2, 1)  # set2-0 went silent
    assert (rows["set1"]["polled"], rows["set1"]["states"]) == (0, {})


def test_a_scope_lists_its_vms_a_page_at_a_time() -> None:
    client = _client(_fleet_of(450))
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = client.get(f"/api/v1/dashboard/scopes/set7?offset={offset}&limit=200").json()
        assert page["total"] == 450 and page["scope"] == "set7"
        assert len(page["vms"]) == min(200, 450 - offset)
        seen += [vm["name"] for vm in page["vms"]]
        offset = page["next"]
    assert seen == [f"set7-{i}" for i in range(450)]
    first = client.get("/api/v1/dashboard/scopes/set7?limit=1").json()["vms"][0]
    assert first == {"name": "set7-0", "scope": "set7", "host": first["host"], "ud": 0,
                     "status": "running", "polled": None}  # fmt: skip
    default = client.get("/api/v1/dashboard/scopes/set7").json()
    assert (len(default["vms"]), default["next"]) == (200, 200)
    found = client.get("/api/v1/dashboard/scopes/set7?q=set7-44").json()
    assert [vm["name"] for vm in found["vms"]] == ["set7-44", *(f"set7-44{i}" for i in range(10))]
    assert found["total"] == 11


def test_a_placement_group_s_id_holds_a_slash_and_its_page_is_found() -> None:
    spec = fleet({"kind": "scale_set", "name": "big", "vms": 600, "placement_groups": 6})
    page = _client(make_fabric(spec)).get("/api/v1/dashboard/scopes/big/pg3?limit=3").json()
    assert page["scope"] == "big/pg3" and page["total"] == 100
    assert [vm["name"] for vm in page["vms"]] == ["big_3", "big_9", "big_15"]


def test_an_unknown_scope_is_404_saying_so_and_bad_paging_400_naming_it() -> None:
    client = _client(_fleet_of(10))
    missing = client.get("/api/v1/dashboard/scopes/nowhere")
    assert missing.status_code == 404
    assert missing.json() == {"error": "no scope called 'nowhere' in this fleet (20 scopes: "
                                       "GET /api/v1/dashboard lists them)"}  # fmt: skip
    for query, name in [("limit=0", "limit"), ("limit=1001", "limit"), ("offset=-1", "offset"),
                        ("offset=x", "offset"), ("limit=2.5", "limit")]:  # fmt: skip
        bad = client.get(f"/api/v1/dashboard/scopes/set1?{query}")
        assert bad.status_code == 400, query
        assert bad.json()["error"].startswith(f"query parameter {name} must be a whole number")


def test_a_search_finds_vms_by_name_or_host_across_the_fleet() -> None:
    fabric = _fleet_of(100)
    client = _client(fabric)
    page = client.get("/api/v1/dashboard/vms?q=SET3-9&limit=5").json()
    assert page["total"] == 11  # set3-9 and set3-90 … set3-99, ignoring case
    assert [vm["name"] for vm in page["vms"]] == ["set3-9", "set3-90", "set3-91", "set3-92",
                                                   "set3-93"]  # fmt: skip
    assert page["next"] == 5
    host = fabric.topology.vms["set5-7"].host
    on_host = client.get(f"/api/v1/dashboard/vms?q={host}").json()["vms"]
    assert "set5-7" in {vm["name"] for vm in on_host}
    assert all(host in vm["host"] or host in vm["name"] for vm in on_host)
    missing = client.get("/api/v1/dashboard/vms")
    assert missing.status_code == 400 and "query parameter q" in missing.json()["error"]


async def test_a_tick_says_per_kind_what_moved_never_the_fleet() -> None:
    fabric = _fleet_of(1000)
    hub = Hub(fabric)
    first = await hub.tick_message()
    assert len(first["kinds"]) == 1 and first["moved"] == []  # totals, sent once
    quiet = await hub.tick_message()
    assert quiet["kinds"] == [] and quiet["moved"] == [] and quiet["moved_total"] == 0
    fabric.note_request(fabric.topology.vms["set4-17"])
    tick = await hub.tick_message()
    assert tick["moved"] == ["set4"] and "scopes" not in tick
    totals = {"region": "westeurope", "kind": "availability_set", "scopes": SCOPES,
              "vms": SCOPES * 1000, "states": {}, "polled": 1, "silent": 0,
              "events": 0}  # fmt: skip
    assert tick["kinds"] == [totals]
    assert len(msgspec.json.encode(tick)) < 300  # one VM polled: nothing of the fleet
    fabric.advance(1)
    fabric.note_request(fabric.topology.vms["set4-17"])  # polls again: the totals hold
    again = await hub.tick_message()
    assert again["moved"] == ["set4"] and again["kinds"] == []
    fabric.submit(OperationRequest(kind="hardware-failure", vms=("set9-3",)))
    failed = await hub.tick_message()
    assert failed["moved"] == ["set9"]
    assert failed["kinds"][0]["states"] == {"redeploying": 1}
    fabric.advance(3600)  # the redeploy is over; set4-17 has been silent an hour
    later = await hub.tick_message()
    assert later["moved"] == ["set9"]
    assert later["kinds"] == [{**totals, "silent": 1}]
    hub.close()


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/dashboard/scopes/set1",
        "/api/v1/dashboard/vms?q=s",
        "/api/v1/dashboard/scopes?kind=availability_set",
    ],
)
def test_the_pages_need_the_token(path: str) -> None:
    app = ControlApp(_fleet_of(10), token="rollup-token")
    client = TestClient(app.asgi)
    assert client.get(path).status_code == 401
    allowed = client.get(path, headers={"Authorization": "Bearer rollup-token"})
    assert allowed.status_code == 200
