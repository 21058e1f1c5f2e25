"""Fleet files and the topology built from them (CONTRACT section 5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from forewarn.fleet import (
    FleetError,
    ScopeKind,
    Topology,
    UnknownName,
    build_topology,
    demo_fleet,
    fleet_from_builtins,
    fleet_to_builtins,
    load_fleet_file,
)
from tests.support.fabrics import DEMO_LAYOUT, fleet


@pytest.fixture(scope="module")
def demo() -> Topology:
    return build_topology(demo_fleet())


def test_demo_fleet_has_one_scope_of_every_kind(demo: Topology) -> None:
    assert {sid: s.kind for sid, s in demo.scopes.items()} == {
        "web": ScopeKind.AVAILABILITY_SET,
        "workers": ScopeKind.SCALE_SET,
        "jumpbox": ScopeKind.STANDALONE,
        "shop": ScopeKind.CLOUD_SERVICE,
    }
    assert demo.default_vm == "web-0"


@pytest.mark.parametrize(
    ("scope_id", "names"),
    [
        ("web", tuple(f"web-{i}" for i in range(6))),
        ("workers", tuple(f"workers_{i}" for i in range(4))),
        ("jumpbox", ("jumpbox",)),
        ("shop", ("FrontEnd_IN_0", "FrontEnd_IN_1", "BackEnd_IN_0")),
    ],
)
def test_demo_scope_names(demo: Topology, scope_id: str, names: tuple[str, ...]) -> None:
    assert demo.scopes[scope_id].vm_names == names
    assert all(demo.scope_of(n).id == scope_id for n in names)


def test_demo_layout_hosts_and_update_domains(demo: Topology) -> None:
    layout = {n: (v.scope_id, v.host, v.update_domain) for n, v in demo.vms.items()}
    assert layout == DEMO_LAYOUT
    assert sorted(demo.hosts()) == ["host-1", "host-2", "host-3", "host-4"]
    assert {h: sorted(v.name for v in demo.vms_on_host(h)) for h in demo.hosts()} == {
        "host-1": sorted(["web-0", "workers_1", "FrontEnd_IN_0"]),
        "host-2": sorted(["web-1", "web-4", "workers_2", "FrontEnd_IN_1"]),
        "host-3": sorted(["web-2", "web-5", "workers_3", "BackEnd_IN_0"]),
        "host-4": sorted(["web-3", "workers_0", "jumpbox"]),
    }
    assert demo.scopes["web"].update_domains == 3
    assert {demo.vms[n].update_domain for n in demo.scopes["web"].vm_names} == {0, 1, 2}


def test_demo_hosts_carry_one_update_domain_of_each_scope(demo: Topology) -> None:
    """S4: maintaining a host never touches two update domains of one scope."""
    domains: dict[tuple[str, str], set[int]] = {}
    for vm in demo.vms.values():
        domains.setdefault((vm.host, vm.scope_id), set()).add(vm.update_domain)
    assert {pair: len(uds) for pair, uds in domains.items()} == dict.fromkeys(domains, 1)
    assert {pair: uds.pop() for pair, uds in domains.items()} == {
        ("host-1", "web"): 0,
        ("host-2", "web"): 1,
        ("host-3", "web"): 2,
        ("host-4", "web"): 0,
        ("host-4", "workers"): 0,
        ("host-1", "workers"): 1,
        ("host-2", "workers"): 0,
        ("host-3", "workers"): 1,
        ("host-4", "jumpbox"): 0,
        ("host-1", "shop"): 0,
        ("host-2", "shop"): 1,
        ("host-3", "shop"): 0,
    }


def test_explicit_fleet_with_two_update_domains_of_a_scope_on_one_host_is_rejected() -> None:
    vms = [
        {"name": "a", "host": "rack-7", "update_domain": 0},
        {"name": "b", "host": "rack-8", "update_domain": 0},
        {"name": "c", "host": "rack-7", "update_domain": 1},
    ]
    with pytest.raises(FleetError, match=r"host 'rack-7'") as info:
        build_topology(fleet({"kind": "availability_set", "name": "app", "vms": vms}))
    message = str(info.value)
    assert "'a' (update domain 0)" in message
    assert "'c' (update domain 1)" in message
    assert "scope 'app'" in message


def test_a_host_may_carry_one_update_domain_of_each_of_several_scopes() -> None:
    topo = build_topology(
        fleet(
            {
                "kind": "availability_set",
                "name": "app",
                "vms": [
                    {"name": "a", "host": "rack-7", "update_domain": 1},
                    {"name": "b", "host": "rack-7", "update_domain": 1},
                ],
            },
            {
                "kind": "availability_set",
                "name": "db",
                "vms": [{"name": "c", "host": "rack-7", "update_domain": 0}],
            },
        )
    )
    assert [(v.name, v.scope_id, v.update_domain) for v in topo.vms_on_host("rack-7")] == [
        ("a", "app", 1),
        ("b", "app", 1),
        ("c", "db", 0),
    ]


def test_assigned_hosts_use_the_pool_and_grow_it_only_for_another_update_domain() -> None:
    one_domain = build_topology(
        fleet({"kind": "availability_set", "name": "app", "vms": 3, "update_domains": 1}, hosts=3)
    )
    assert {n: v.host for n, v in one_domain.vms.items()} == {
        "app-0": "host-1",
        "app-1": "host-2",
        "app-2": "host-3",
    }
    three_domains = build_topology(
        fleet({"kind": "availability_set", "name": "app", "vms": 4, "update_domains": 3}, hosts=2)
    )
    assert {n: (v.host, v.update_domain) for n, v in three_domains.vms.items()} == {
        "app-0": ("host-1", 0),
        "app-1": ("host-2", 1),
        "app-2": ("host-3", 2),
        "app-3": ("host-1", 0),
    }


def test_demo_scale_set_is_spot_with_five_minute_terminate_notification(demo: Topology) -> None:
    workers = demo.scopes["workers"]
    assert workers.policy.terminate_notification
    assert workers.policy.terminate_timeout_minutes == 5
    assert all(demo.vms[n].spot and demo.vms[n].scale_set == "workers" for n in workers.vm_names)
    assert not any(demo.vms[n].spot for n in demo.vms if n not in workers.vm_names)


def test_only_cloud_services_have_role_instances(demo: Topology) -> None:
    assert [sid for sid, s in demo.scopes.items() if s.role_instances] == ["shop"]


def test_addresses_are_unique_and_vm_ids_stable(demo: Topology) -> None:
    assert len({v.address for v in demo.vms.values()}) == len(demo.vms)
    again = build_topology(demo_fleet())
    assert [v.vm_id for v in again.vms.values()] == [v.vm_id for v in demo.vms.values()]
    assert demo.address_map()[demo.vms["jumpbox"].address] == demo.vms["jumpbox"]


def test_vm_lookup_ignores_case_and_unknowns_raise(demo: Topology) -> None:
    assert demo.vm("WEB-3").name == "web-3"
    assert demo.vm("frontend_in_1").name == "FrontEnd_IN_1"
    with pytest.raises(UnknownName, match="nope"):
        demo.vm("nope")
    with pytest.raises(UnknownName, match="host-9"):
        demo.vms_on_host("host-9")
    with pytest.raises(UnknownName, match="nope"):
        demo.scope("nope")


def test_placement_groups_split_a_scale_set_into_scopes() -> None:
    topo = build_topology(
        fleet({"kind": "scale_set", "name": "set", "vms": 5, "placement_groups": 3})
    )
    assert list(topo.scopes) == ["set/pg0", "set/pg1", "set/pg2"]
    assert topo.scopes["set/pg0"].vm_names == ("set_0", "set_3")
    assert topo.scopes["set/pg1"].vm_names == ("set_1", "set_4")
    assert topo.scopes["set/pg2"].vm_names == ("set_2",)
    assert all(v.scale_set == "set" for v in topo.vms.values())


def test_explicit_vm_list_is_honoured() -> None:
    vms = [
        {
            "name": "alpha",
            "host": "rack-7",
            "update_domain": 2,
            "fault_domain": 1,
            "address": "10.0.0.5",
            "port": 8101,
            "zone": "2",
        },
        {"name": "beta"},
    ]
    topo = build_topology(
        fleet({"kind": "availability_set", "name": "app", "vms": vms, "update_domains": 3})
    )
    alpha, beta = topo.vms["alpha"], topo.vms["beta"]
    assert (alpha.host, alpha.update_domain, alpha.fault_domain) == ("rack-7", 2, 1)
    assert (alpha.address, alpha.port, alpha.zone) == ("10.0.0.5", 8101, "2")
    assert topo.port_map()[8101] is alpha
    assert sorted(topo.port_map()) == [8101]
    assert beta.update_domain == 1  # assigned by position
    assert topo.scopes["app"].vm_names == ("alpha", "beta")


def test_fleet_round_trips_through_builtins() -> None:
    spec = demo_fleet()
    assert fleet_from_builtins(fleet_to_builtins(spec)) == spec


def _app(**extra: Any) -> dict[str, Any]:
    return {"kind": "availability_set", "name": "app", "vms": 2, **extra}


def _set(**extra: Any) -> dict[str, Any]:
    return {"kind": "scale_set", "name": "set", "vms": 2, **extra}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param({"scopes": [], "colour": "red"}, r"colour", id="unknown-top-key"),
        pytest.param(
            {"scopes": [_app(colour="red")]}, r"colour.*\$\.scopes\[0\]", id="unknown-scope-key"
        ),
        pytest.param(
            {"scopes": [_app(vms=[{"name": "a", "ram": 4}])]}, r"ram", id="unknown-vm-key"
        ),
        pytest.param({"scopes": [{"kind": "mainframe", "name": "x"}]}, r"kind", id="bad-kind"),
        pytest.param({"scopes": [_app(vms="many")]}, r"vms", id="bad-type"),
        pytest.param(
            {"scopes": [_app(vms=[{"name": "db"}]), _app(name="other", vms=[{"name": "DB"}])]},
            r"'DB' is used twice.*case-insensitive",
            id="duplicate-name-case-insensitive",
        ),
        pytest.param(
            {
                "scopes": [
                    _app(
                        vms=[
                            {"name": "a", "address": "10.0.0.1"},
                            {"name": "b", "address": "10.0.0.1"},
                        ]
                    )
                ]
            },
            r"'a' and 'b' share address 10\.0\.0\.1",
            id="duplicate-address",
        ),
        pytest.param(
            {"scopes": [_app(vms=[{"name": "a", "port": 9000}, {"name": "b", "port": 9000}])]},
            r"'a' and 'b' share port 9000",
            id="duplicate-port",
        ),
        pytest.param(
            {"scopes": [_set(terminate_notification={"timeout_minutes": 4})]},
            r"5 to 15 minutes, got 4",
            id="terminate-timeout-too-short",
        ),
        pytest.param(
            {"scopes": [_set(terminate_notification={"timeout_minutes": 16})]},
            r"5 to 15 minutes, got 16",
            id="terminate-timeout-too-long",
        ),
        pytest.param(
            {"scopes": [_app(terminate_notification={})]},
            r"terminate_notification is a scale-set setting",
            id="terminate-on-availability-set",
        ),
        pytest.param(
            {"scopes": [_app(update_domains=3, vms=[{"name": "a", "update_domain": 3}])]},
            r"update domain 3 is outside 0\.\.2",
            id="update-domain-out-of-range",
        ),
        pytest.param(
            {"scopes": [_app(fault_domains=2, vms=[{"name": "a", "fault_domain": -1}])]},
            r"fault domain -1 is outside 0\.\.1",
            id="fault-domain-out-of-range",
        ),
        pytest.param(
            {"scopes": [_app(update_domains=0)]}, r"domain counts", id="zero-update-domains"
        ),
        pytest.param(
            {"scopes": [{"kind": "cloud_service", "name": "shop"}]},
            r"cloud service 'shop' needs roles",
            id="cloud-service-without-roles",
        ),
        pytest.param(
            {"scopes": [{"kind": "cloud_service", "name": "shop", "roles": {}}]},
            r"needs roles",
            id="cloud-service-empty-roles",
        ),
        pytest.param(
            {"scopes": [{"kind": "standalone", "name": "solo", "vms": 2}]},
            r"exactly one VM",
            id="standalone-count",
        ),
        pytest.param({"scopes": [_app(vms=0)]}, r"at least one VM", id="empty-scope"),
        pytest.param(
            {"scopes": [_set(placement_groups=3)]},
            r"3 placement groups for 2 VMs",
            id="empty-placement-group",
        ),
        pytest.param(
            {"scopes": [_app(placement_groups=2)]},
            r"placement_groups is a scale-set setting",
            id="placement-groups-on-availability-set",
        ),
        pytest.param(
            {"scopes": [_app(vms=[{"name": "a", "address": "not-an-ip"}])]},
            r"invalid address 'not-an-ip'",
            id="invalid-address",
        ),
        pytest.param({"scopes": [_app()], "default_vm": "ghost"}, r"ghost", id="unknown-default"),
        pytest.param({"scopes": [_app(), _app()]}, r"'app' is defined twice", id="duplicate-scope"),
        pytest.param({"scopes": [_app()], "hosts": -1}, r"hosts must be at least 1", id="hosts"),
        pytest.param(
            {"scopes": [_app()], "address_prefix": "banana"}, r"address_prefix", id="prefix"
        ),
    ],
)
def test_invalid_fleets_raise_fleet_error_naming_the_problem(raw: Any, message: str) -> None:
    with pytest.raises(FleetError, match=message):
        build_topology(fleet_from_builtins(raw))


def test_standalone_scope_with_explicit_list_holds_exactly_one_vm() -> None:
    raw = {
        "scopes": [{"kind": "standalone", "name": "solo", "vms": [{"name": "a"}, {"name": "b"}]}]
    }
    with pytest.raises(FleetError, match="exactly one VM"):
        build_topology(fleet_from_builtins(raw))


def test_load_fleet_file_reads_yaml(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(
        "hosts: 2\nscopes:\n  - kind: scale_set\n    name: gpu\n    vms: 3\n"
        "    gpu: true\n    fault_domains: 1\n",
        encoding="utf-8",
    )
    topo = build_topology(load_fleet_file(path))
    assert topo.scopes["gpu"].vm_names == ("gpu_0", "gpu_1", "gpu_2")
    assert topo.scopes["gpu"].policy.per_vm_visibility
    # Three update domains of one scope cannot share two hosts: the pool grows by one.
    assert {n: (v.host, v.update_domain) for n, v in topo.vms.items()} == {
        "gpu_0": ("host-1", 0),
        "gpu_1": ("host-2", 1),
        "gpu_2": ("host-3", 2),
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("scopes: [unclosed\n", r"not valid YAML", id="bad-yaml"),
        pytest.param("", r"Expected `object`", id="empty-file"),
        pytest.param("- just\n- a list\n", r"Expected `object`", id="list"),
        pytest.param("scopes:\n  - kind: standalone\n", r"name", id="missing-field"),
    ],
)
def test_load_fleet_file_rejects_bad_content(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FleetError, match=message) as info:
        load_fleet_file(path)
    if "YAML" not in message:
        assert str(path) in str(info.value)


def test_load_fleet_file_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    with pytest.raises(FleetError, match=r"cannot read fleet file .*absent\.yaml"):
        load_fleet_file(path)


def test_port_base_gives_every_vm_without_a_port_its_own() -> None:
    topology = build_topology(
        fleet_from_builtins(
            {
                "port_base": 9100,
                "scopes": [
                    {"kind": "availability_set", "name": "a", "vms": 2},
                    {"kind": "standalone", "name": "s"},
                    {"kind": "scale_set", "name": "set", "vms": [{"name": "set_7", "port": 9999}]},
                ],
            }
        )
    )
    assert {n: vm.port for n, vm in topology.vms.items()} == {
        "a-0": 9100,
        "a-1": 9101,
        "s": 9102,
        "set_7": 9999,
    }
    assert topology.port_map()[9101] is topology.vms["a-1"]


def test_port_base_must_leave_room_for_every_vm() -> None:
    spec = fleet_from_builtins(
        {"port_base": 65534, "scopes": [{"kind": "availability_set", "name": "a", "vms": 3}]}
    )
    with pytest.raises(FleetError, match="port_base 65534 leaves no room for 3 ports"):
        build_topology(spec)


def test_automatic_hosts_avoid_an_explicit_host_of_another_update_domain() -> None:
    topology = build_topology(
        fleet_from_builtins(
            {
                "scopes": [
                    {
                        "kind": "availability_set",
                        "name": "s",
                        "update_domains": 3,
                        "vms": [{"name": "a", "host": "host-1", "update_domain": 0}, {"name": "b"}],
                    }
                ]
            }
        )
    )
    assert {n: (vm.host, vm.update_domain) for n, vm in topology.vms.items()} == {
        "a": ("host-1", 0),
        "b": ("host-2", 1),
    }
