"""A million-VM fleet without a Python object per VM: VMs made from a count are found by
name, address and port as if they had all been built, and clashes are still refused."""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest

from forewarn.fleet import FleetError, Topology, build_topology, fleet_from_builtins
from forewarn.imds.identity import VmResolver


def _fleet(*scopes: dict[str, Any], **top: Any) -> Topology:
    return build_topology(fleet_from_builtins({"scopes": list(scopes), **top}))


def test_a_million_vm_fleet_is_laid_out_in_a_few_bytes_per_vm() -> None:
    tracemalloc.start()
    try:
        fleet = _fleet(
            {"kind": "scale_set", "name": "big", "vms": 500_000, "placement_groups": 5_000},
            {"kind": "availability_set", "name": "av", "vms": 499_999, "update_domains": 5},
        )
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(fleet.vms) == 999_999
    assert held < 50 * len(fleet.vms)  # a built VM and its index entries take ~700 bytes
    assert len(fleet.scopes) == 5_001
    assert len(fleet.scopes["big/pg7"].vm_names) == 100


def test_counted_vms_are_found_by_name_address_and_port() -> None:
    fleet = _fleet(
        {"kind": "standalone", "name": "Solo"},
        {"kind": "scale_set", "name": "Big", "vms": 1_000, "placement_groups": 10},
        {"kind": "cloud_service", "name": "cs", "roles": {"Web": 2, "Work": 3}},
        port_base=30_000,
    )
    vms = list(fleet.vms.values())
    assert [vm.name for vm in vms[:3]] == ["Solo", "Big_0", "Big_1"]
    assert list(fleet.vms) == [vm.name for vm in vms]
    resolver = VmResolver(fleet)
    for vm in vms:
        assert fleet.vms[vm.name] is vm  # the same VM every time it is asked for
        assert fleet.vm(vm.name.upper()) is vm
        assert resolver.resolve(vm.address, None) is vm
        assert resolver.resolve("10.9.9.9", vm.port) is vm
    assert fleet.vms["Big_999"].scope_id == "Big/pg9"
    assert fleet.scopes["Big/pg9"].vm_names[-1] == "Big_999"
    assert "Big_999" in fleet.scopes["Big/pg9"].vm_names
    assert "Big_998" not in fleet.scopes["Big/pg9"].vm_names
    assert [n for n in fleet.scopes["cs"].vm_names] == [
        "Web_IN_0", "Web_IN_1", "Work_IN_0", "Work_IN_1", "Work_IN_2",
    ]  # fmt: skip
    for missing in ("Big_1000", "Big_01", "Big_", "big_x", "Web_IN_2", "Big_-1"):
        assert missing not in fleet.vms
        assert fleet.vms.get(missing) is None
    assert "big_5" not in fleet.vms  # a Mapping look-up is exact; ``vm`` ignores case
    assert fleet.vm("big_5").name == "Big_5"
    on_host = fleet.vms_on_host(vms[5].host)
    assert vms[5] in on_host and all(vm.host == vms[5].host for vm in on_host)
    assert sum(len(v) for v in fleet.hosts().values()) == len(vms)


@pytest.mark.parametrize(
    ("scopes", "twice"),
    [
        # a VM written out whose name a count also makes
        ([{"kind": "availability_set", "name": "web", "vms": 3},
          {"kind": "standalone", "name": "web-2"}], "web-2"),
        # ignoring case
        ([{"kind": "standalone", "name": "WEB-0"},
          {"kind": "availability_set", "name": "web", "vms": 3}], "web-0"),
        # two counts that make the same names
        ([{"kind": "cloud_service", "name": "a", "roles": {"Web": 2}},
          {"kind": "cloud_service", "name": "b", "roles": {"web": 1}}], "web_IN_0"),
    ],
)  # fmt: skip
def test_a_name_a_count_makes_is_still_used_once(scopes: list[dict[str, Any]], twice: str) -> None:
    with pytest.raises(FleetError, match=f"VM name '{twice}' is used twice"):
        _fleet(*scopes)


def test_names_a_count_does_not_make_are_free() -> None:
    fleet = _fleet(
        {"kind": "availability_set", "name": "web", "vms": 3},
        {"kind": "standalone", "name": "web-3"},  # past the count
        {"kind": "standalone", "name": "web-01"},  # not how a count writes 1
    )
    assert fleet.vms["web-3"].scope_id == "web-3"
    assert fleet.vms["web-01"].scope_id == "web-01"
    assert fleet.vms["web-1"].scope_id == "web"


def test_an_explicit_port_a_counted_vm_has_is_refused() -> None:
    with pytest.raises(FleetError, match="share port 20001"):
        _fleet(
            {"kind": "availability_set", "name": "web", "vms": 3},
            {"kind": "availability_set", "name": "db", "vms": [{"name": "db0", "port": 20001}]},
            port_base=20_000,
        )
