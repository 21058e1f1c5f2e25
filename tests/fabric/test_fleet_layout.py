"""Big fleets: automatic addresses across 127.0.0.0/8, hosts in O(VMs), the same layout as
before for every fleet that already worked, and a resolver that finds any VM of them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forewarn.fleet import FleetError, Topology, build_topology, fleet_from_builtins
from forewarn.fleet.layout import BLOCK, HostAssigner, assign_addresses
from forewarn.imds.identity import VmResolver


def old_address(i: int, prefix: str = "127.1") -> str:
    """The address earlier versions gave the VM at fleet position ``i`` (< 62,500)."""
    return f"{prefix}.{i // 250}.{i % 250 + 1}"


def _fleet(*scopes: dict[str, Any], **top: Any) -> Topology:
    return build_topology(fleet_from_builtins({"scopes": list(scopes), **top}))


@pytest.fixture(scope="module")
def big() -> Topology:
    """100,001 VMs; the default VM comes first with an explicit address inside the pool."""
    return _fleet(
        {"kind": "standalone", "name": "bench", "vms": [{"name": "bench", "address": "127.1.0.9"}]},
        {"kind": "scale_set", "name": "big", "vms": 50_000, "placement_groups": 500},
        {"kind": "availability_set", "name": "av", "vms": 50_000, "update_domains": 5},
        default_vm="bench",
    )


def test_a_100k_fleet_gets_unique_addresses_across_127_8(big: Topology) -> None:
    addresses = [vm.address for vm in big.vms.values()]
    assert len(big.vms) == 100_001
    assert len(set(addresses)) == len(addresses)
    assert "127.0.0.1" not in addresses
    assert [vm.name for vm in big.vms.values() if vm.address == "127.1.0.9"] == ["bench"]
    for address in addresses:
        octets = [int(part) for part in address.split(".")]
        assert octets[0] == 127 and len(octets) == 4 and all(0 <= o <= 255 for o in octets)
    # Past the first /16 the pool goes on in the next one, the same way.
    # (av-k is at fleet position 50,001 + k.)
    assert big.vms["av-12498"].address == "127.1.249.250"  # position 62,499
    assert big.vms["av-12499"].address == "127.2.0.1"  # position 62,500
    assert big.vms["av-49999"].address == "127.2.150.1"  # position 100,000


def test_the_first_62500_positions_keep_their_old_addresses(big: Topology) -> None:
    vms = list(big.vms.values())
    # Position 0 is the default VM's own; position 8's old address is that explicit one,
    # so that VM gets the first spare, the slot after the whole fleet.
    assert vms[8].address == "127.2.150.2"
    assert all(vm.address == old_address(i) for i, vm in enumerate(vms[1:62_500], 1) if i != 8)


def test_the_resolver_finds_vms_across_the_range(big: Topology) -> None:
    resolver = VmResolver(big)
    vms = list(big.vms.values())
    for position in (1, 7, 9, 62_499, 62_500, 100_000):
        vm = vms[position]
        assert resolver.resolve(vm.address, 80) is vm
        assert resolver.resolve(f"::ffff:{vm.address}", 80) is vm
    assert resolver.resolve("127.2.0.1", None) is big.vms["av-12499"]
    assert resolver.resolve("127.1.0.9", 80) is big.vms["bench"]
    assert resolver.resolve("127.0.0.1", 80) is big.vms["bench"]  # plain: the default VM
    assert resolver.resolve("127.9.0.1", 80) is big.vms["bench"]  # nobody's: the default VM


def test_hosts_of_a_100k_fleet_never_carry_two_update_domains_of_a_scope(big: Topology) -> None:
    held: dict[tuple[str, str], int] = {}
    for vm in big.vms.values():
        assert held.setdefault((vm.host, vm.scope_id), vm.update_domain) == vm.update_domain
    assert len(big.hosts()) == 25_001  # a quarter of the VMs, rounded up: no growth needed


def test_an_explicit_address_is_never_handed_out_again() -> None:
    topology = _fleet(
        {"kind": "availability_set", "name": "app", "vms": 3},
        {"kind": "standalone", "name": "z", "vms": [{"name": "z", "address": "127.1.0.2"}]},
    )
    assert {n: vm.address for n, vm in topology.vms.items()} == {
        "app-0": "127.1.0.1",
        "app-1": "127.1.0.5",  # its own slot's address is z's: the first spare after the fleet
        "app-2": "127.1.0.3",
        "z": "127.1.0.2",
    }


def test_vms_after_an_explicit_address_keep_their_position() -> None:
    """As before: a VM with its own address still takes a slot, so the rest do not move."""
    topology = _fleet(
        {"kind": "availability_set", "name": "app", "vms": [
            {"name": "a"}, {"name": "b", "address": "10.0.0.5"}, {"name": "c"},
        ]},
    )  # fmt: skip
    assert [vm.address for vm in topology.vms.values()] == ["127.1.0.1", "10.0.0.5", "127.1.0.3"]


def test_127_0_0_1_is_never_an_automatic_address() -> None:
    topology = _fleet({"kind": "availability_set", "name": "app", "vms": 2}, address_prefix="127.0")
    assert [vm.address for vm in topology.vms.values()] == ["127.0.0.3", "127.0.0.2"]


def test_the_pool_wraps_around_within_the_prefix_slash_8() -> None:
    addresses = assign_addresses("127.255", [None] * (BLOCK + 2))
    assert addresses[BLOCK - 1] == "127.255.249.250"
    assert addresses[BLOCK] == "127.0.0.3"  # 127.0.0.1 is skipped: the first spare
    assert addresses[BLOCK + 1] == "127.0.0.2"
    assert len(set(addresses)) == len(addresses)


def test_explicit_addresses_are_normalized_as_sockets_report_them() -> None:
    topology = _fleet({"kind": "availability_set", "name": "app", "vms": [
        {"name": "a", "address": "::FFFF:10.1.2.3"}, {"name": "b", "address": "FD00:0::1"},
    ]})  # fmt: skip
    assert [vm.address for vm in topology.vms.values()] == ["10.1.2.3", "fd00::1"]
    assert VmResolver(topology).resolve("::ffff:10.1.2.3", 80) is topology.vms["a"]


def test_a_small_pool_lends_the_slots_of_explicit_vms_before_it_gives_up() -> None:
    # Four slots; VM 1 has its own address, so slot 1 is free for a VM whose slot is taken.
    addresses = assign_addresses("127.1", [None, "10.0.0.1", "127.1.0.1", None], pool=4)
    assert addresses == ["127.1.0.2", "10.0.0.1", "127.1.0.1", "127.1.0.4"]
    with pytest.raises(FleetError) as info:
        assign_addresses("127.1", [None, "127.1.0.2", None, None, None], pool=4)
    assert str(info.value) == (
        "at most 3 VMs get automatic addresses in 127.0.0.0/8 "
        "(without 127.0.0.1 and the explicit addresses); 4 need one"
    )


def test_explicit_vms_do_not_count_against_the_automatic_addresses() -> None:
    assert assign_addresses("127.1", ["10.0.0.1", None, "10.0.0.2", None], pool=2) == [
        "10.0.0.1", "127.1.0.2", "10.0.0.2", "127.1.0.1",
    ]  # fmt: skip


def test_a_fleet_may_not_ask_for_more_than_a_million_vms() -> None:
    with pytest.raises(FleetError, match=r"asks for 100000000 VMs; a fleet holds at most"):
        _fleet({"kind": "scale_set", "name": "oops", "vms": 100_000_000})


def test_hosts_stay_linear_when_update_domains_come_in_long_runs() -> None:
    """25,000 VMs of update domain 0, then 25,000 of domain 1: every VM of the second run
    must skip the whole first lap (this was quadratic)."""
    vms = [{"name": f"a{i}", "update_domain": 0} for i in range(25_000)]
    vms += [{"name": f"b{i}", "update_domain": 1} for i in range(25_000)]
    topology = _fleet({"kind": "availability_set", "name": "s", "vms": vms}, hosts=10_000)
    hosts = topology.hosts()
    assert len(hosts) == 10_001
    assert {vm.update_domain for vm in hosts["host-10001"]} == {1}
    assert all(
        {vm.update_domain for vm in on} == {0} for h, on in hosts.items() if h != "host-10001"
    )


class _OldHosts:
    """The host assignment of earlier versions, verbatim in effect: the reference."""

    def __init__(self, count: int) -> None:
        self.count, self.cursor = count, 0
        self.domains: dict[tuple[str, str], int] = {}

    def assign(self, scope_id: str, ud: int) -> str:
        for step in range(self.count):
            index = (self.cursor + step) % self.count
            held = self.domains.get((f"host-{index + 1}", scope_id))
            if held is None or held == ud:
                break
        else:
            index = self.count
            self.count += 1
        self.cursor = (index + 1) % self.count
        self.place(f"host-{index + 1}", scope_id, ud)
        return f"host-{index + 1}"

    def place(self, host: str, scope_id: str, ud: int) -> None:
        self.domains.setdefault((host, scope_id), ud)


_STEP = st.tuples(
    st.sampled_from(["s1", "s2", "s3"]),
    st.integers(0, 4),
    st.none() | st.sampled_from(["host-1", "host-2", "host-3", "host-7", "host-01", "rack"]),
)


@settings(max_examples=300, deadline=None)
@given(count=st.integers(1, 6), steps=st.lists(_STEP, max_size=60))
def test_host_assignment_is_the_same_as_before(
    count: int, steps: list[tuple[str, int, str | None]]
) -> None:
    new, old = HostAssigner(count), _OldHosts(count)
    for scope_id, ud, explicit in steps:
        if explicit is None:
            assert new.assign(scope_id, ud) == old.assign(scope_id, ud)
        else:
            new.place(explicit, scope_id, ud)
            old.place(explicit, scope_id, ud)
    assert new.count == old.count


@settings(max_examples=300, deadline=None)
@given(
    hosts=st.integers(1, 12),
    before=st.lists(st.tuples(st.sampled_from(["a", "b/pg0"]), st.integers(0, 2)), max_size=8),
    groups=st.integers(1, 4),
    update_domains=st.integers(1, 5),
    count=st.integers(1, 80),
)
def test_a_counted_run_gets_the_hosts_one_by_one_assignment_gives(
    hosts: int, before: list[tuple[str, int]], groups: int, update_domains: int, count: int
) -> None:
    """``assign_run`` (a scope entry's VMs made from a count, mostly arithmetic) is
    ``assign`` called for each VM in turn, clashes, wrap-arounds and growth included."""
    scope_ids = ["b"] if groups == 1 else [f"b/pg{k}" for k in range(groups)]
    runs, single = HostAssigner(hosts), HostAssigner(hosts)
    for scope_id, ud in before:  # earlier VMs, some in the run's own scope
        assert runs.assign(scope_id, ud) == single.assign(scope_id, ud)
    placed = runs.assign_run(scope_ids, update_domains, count)
    one_by_one = [single.assign(scope_ids[i % groups], i % update_domains) for i in range(count)]
    assert [runs.name(index) for index in placed] == one_by_one
    assert runs.count == single.count
    assert runs.assign("c", 0) == single.assign("c", 0)  # the cursor is where it was left
