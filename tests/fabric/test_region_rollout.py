"""A platform update over the whole region: update domain by update domain, host by host,
in waves of a bounded number of hosts, every live VM once, on the demo fleet (its layout in
``DEMO_LAYOUT``) and on a fleet made from counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from forewarn.fabric import Clock, Conflict, Fabric, InvalidOperation, OperationRequest
from forewarn.fleet import FleetSpec
from forewarn.store import SQLiteStore
from tests.fabric.conftest import FabricFactory
from tests.support.fabrics import (
    DEMO_LAYOUT,
    MINUTE,
    T0,
    fleet,
    live,
    make_fabric,
    observable,
    submit,
)

#: The demo fleet's walk in waves of two hosts: (update domain, hosts) of each wave.
DEMO_WAVES_OF_TWO = [
    (0, ("host-1", "host-2")),
    (0, ("host-3", "host-4")),
    (1, ("host-1", "host-2")),
    (1, ("host-3",)),
    (2, ("host-3",)),
]


def region(kind: str = "host-update", **fields: Any) -> OperationRequest:
    return OperationRequest(kind=kind, region=True, **fields)


def run_to_end(fabric: Fabric) -> list[list[tuple[str, str, int, tuple[str, ...]]]]:
    """Advance until nothing is due; the events of each wave as made, in order: (scope,
    host, update domain, resources) each. Checks that one wave at a time is live."""
    waves: list[list[tuple[str, str, int, tuple[str, ...]]]] = []
    seen: set[str] = set()
    for _ in range(1000):
        rolling = {o.id for o in fabric.operations() if o.target == "region"}
        events = [e for e in fabric.events() if e.operation_id in rolling]
        assert len({e.operation_id for e in events}) <= 1, "two waves at once"
        fresh = [e for e in events if e.id not in seen]
        if fresh:
            wave = []
            for event in fresh:
                seen.add(event.id)
                placed = {(fabric.topology.vms[n].host, fabric.topology.vms[n].update_domain)
                          for n in event.resources}  # fmt: skip
                assert len(placed) == 1, f"an event spans hosts or update domains: {placed}"
                ((host, domain),) = placed
                wave.append((event.scope_id, host, domain, event.resources))
            waves.append(wave)
        due = fabric.next_due()
        if due is None:
            return waves
        fabric.advance(due - fabric.clock.now())
    raise AssertionError("the rollout never ended")


def shape(
    waves: list[list[tuple[str, str, int, tuple[str, ...]]]],
) -> list[tuple[int, tuple[str, ...]]]:
    """Each wave's update domain and hosts, in walk order."""
    out = []
    for wave in waves:
        domains = {d for _, _, d, _ in wave}
        assert len(domains) == 1, f"a wave spans update domains {domains}"
        hosts = tuple(sorted({h for _, h, _, _ in wave}, key=lambda h: int(h[5:])))
        out.append((domains.pop(), hosts))
    return out


def test_a_region_rollout_walks_update_domains_then_hosts_in_waves(fabric: Fabric) -> None:
    op = fabric.submit(region(wave_hosts=2))
    assert op.target == "region"
    assert sorted(op.vms) == ["FrontEnd_IN_0", "web-0", "workers_2"]
    assert {e.not_before for e in live(fabric, op)} == {T0 + 15 * MINUTE}
    waves = run_to_end(fabric)
    assert shape(waves) == DEMO_WAVES_OF_TWO
    touched = [n for wave in waves for *_, names in wave for n in names]
    assert sorted(touched) == sorted(DEMO_LAYOUT), "every VM exactly once"
    (rollout,) = fabric.rollouts()
    assert rollout.done and rollout.region and rollout.cursor is None
    groups = {(scope, host, ud) for scope, host, ud in DEMO_LAYOUT.values()}
    assert (rollout.next_batch, rollout.waves, rollout.events) == (5, 5, len(groups))
    assert len(groups) == 12  # web-1 and web-4 share one event, web-2 and web-5 another
    assert all(o.state.value == "completed" for o in fabric.operations())


def test_events_group_by_scope_host_and_update_domain(fabric: Fabric) -> None:
    fabric.submit(region(wave_hosts=1))  # host-1 in update domain 0: web-0, FrontEnd_IN_0
    events = sorted((e.scope_id, e.resources) for e in fabric.events())
    assert events == [("shop", ("FrontEnd_IN_0",)), ("web", ("web-0",))]
    fabric.advance(20 * MINUTE)  # started at 15 min, removed at 20: the next wave
    assert sorted((e.scope_id, e.resources) for e in fabric.events()) == [
        ("workers", ("workers_2",))
    ]


def test_the_default_wave_takes_many_hosts(fabric: Fabric) -> None:
    op = fabric.submit(region("platform-reboot"))  # 100 hosts: all of update domain 0
    assert sorted(op.vms) == sorted(n for n, (_, _, ud) in DEMO_LAYOUT.items() if ud == 0)
    assert fabric.rollouts()[0].waves == 3


def test_deleted_vms_are_skipped_and_a_wave_of_them_only_too(fabric: Fabric) -> None:
    evicted = live(fabric, submit(fabric, "spot-eviction", "workers_1"))[0]
    fabric.start_event(evicted.id)
    fabric.advance(MINUTE)
    assert fabric.is_deleted("workers_1")
    fabric.submit(region("platform-redeploy", wave_hosts=1))
    waves = run_to_end(fabric)
    touched = [n for wave in waves for *_, names in wave for n in names]
    assert sorted(touched) == sorted(set(DEMO_LAYOUT) - {"workers_1"})
    # update domain 1 on host-1 holds workers_1 only: that wave is skipped, not made empty
    assert (1, ("host-1",)) not in shape(waves)
    (entry,) = [h for h in fabric.history(limit=1000) if h.kind == "rollout.created"]
    waves_entries = [h.detail for h in fabric.history(limit=1000) if h.kind == "rollout.wave"]
    assert [d["wave"] for d in waves_entries] == [1, 2, 3, 4, 6, 7, 8]
    assert entry.detail["waves"] == 8
    assert [d["update_domain"] for d in waves_entries] == [0, 0, 0, 0, 1, 1, 2]


def test_a_vm_deleted_during_the_rollout_is_not_in_a_later_wave(fabric: Fabric) -> None:
    fabric.submit(region(wave_hosts=2))
    evicted = live(fabric, submit(fabric, "spot-eviction", "workers_3"))[0]  # UD 1, host-3
    fabric.start_event(evicted.id)
    waves = run_to_end(fabric)
    assert fabric.is_deleted("workers_3")
    touched = [n for wave in waves for *_, names in wave for n in names]
    assert "workers_3" not in touched
    assert sorted(touched) == sorted(set(DEMO_LAYOUT) - {"workers_3"})


def test_per_scope_rollouts_run_beside_a_region_rollout(fabric: Fabric) -> None:
    fabric.submit(region(wave_hosts=2))
    scoped = fabric.submit(OperationRequest(kind="platform-reboot", scope="web"))
    assert sorted(scoped.vms) == ["web-0", "web-3"]
    kinds = {r.region for r in fabric.rollouts()}
    assert kinds == {True, False}


def _counted(vms: int) -> FleetSpec:
    return fleet(
        {"kind": "availability_set", "name": "as", "vms": vms, "update_domains": 5},
        {"kind": "scale_set", "name": "ss", "vms": vms, "placement_groups": 2},
    )


def test_a_counted_fleet_is_walked_whole_with_a_record_that_does_not_grow(
    build: FabricFactory,
) -> None:
    sizes = []
    for vms in (200, 2000):
        fabric = build(_counted(vms))
        fabric.submit(region("host-update", wave_hosts=50))
        sizes.append(len(msgspec.json.encode(fabric.rollouts()[0])))
        waves = run_to_end(fabric)
        touched = [n for wave in waves for *_, names in wave for n in names]
        assert sorted(touched) == sorted(fabric.topology.vms), "every VM exactly once"
        domains = [d for d, _ in shape(waves)]
        assert domains == sorted(domains), "update domain by update domain"
        assert all(len(hosts) <= 50 for _, hosts in shape(waves))
        for domain in set(domains):
            hosts = [h for d, hs in shape(waves) if d == domain for h in hs]
            assert hosts == sorted(hosts, key=lambda h: int(h[5:])), "host by host"
            assert len(hosts) == len(set(hosts))
    # a cursor, never the names: ten times the VMs, a few more digits
    assert sizes[1] - sizes[0] < 10, f"the rollout record grew with the fleet: {sizes}"


@pytest.mark.parametrize(
    ("request_fields", "message"),
    [
        ({"kind": "user-reboot"}, "user-reboot is a user operation; name a VM, not the region"),
        ({"kind": "live-migration"}, "live-migration does not roll out over a region; only "
         "host-update, platform-reboot and platform-redeploy walk"),
        ({"kind": "spot-eviction"}, "spot-eviction does not roll out over a region"),
        ({"kind": "host-update", "wave_hosts": 0}, "wave_hosts must be 1 to 10,000, got 0"),
        ({"kind": "host-update", "wave_hosts": 10_001}, "wave_hosts must be 1 to 10,000"),
        ({"kind": "host-update", "scope": "web"}, "name exactly one target"),
        ({"kind": "host-update", "vms": ("web-0",)}, "name exactly one target"),
        ({"kind": "host-update", "notice_seconds": 1.0}, "notice 1 s is below the minimum"),
        ({"kind": "nonsense"}, "nonsense"),
    ],
)  # fmt: skip
def test_bad_region_requests_are_refused_and_change_nothing(
    fabric: Fabric, request_fields: dict[str, Any], message: str
) -> None:
    before = observable(fabric)
    with pytest.raises(InvalidOperation, match=message.replace(".", r"\.").replace("(", r"\(")):
        fabric.submit(OperationRequest(region=True, **request_fields))
    assert observable(fabric) == before


def test_wave_hosts_is_only_for_a_region(fabric: Fabric) -> None:
    before = observable(fabric)
    with pytest.raises(InvalidOperation, match="wave_hosts is only for a region rollout"):
        fabric.submit(OperationRequest(kind="host-update", scope="web", wave_hosts=3))
    assert observable(fabric) == before


def test_a_second_region_rollout_waits_for_the_first(fabric: Fabric) -> None:
    first = fabric.submit(region(wave_hosts=2))
    before = observable(fabric)
    with pytest.raises(Conflict, match=r"a region rollout is already under way \(rollout-"):
        fabric.submit(region("platform-reboot"))
    assert observable(fabric) == before
    run_to_end(fabric)
    again = fabric.submit(region("platform-reboot"))
    assert again.rollout_id != first.rollout_id


def test_a_restart_on_another_fleet_ends_the_rollout_rather_than_walk_another_order(
    tmp_path: Path,
) -> None:
    clock = Clock.virtual(start=T0)
    store = SQLiteStore(tmp_path / "f.db")
    web = {"kind": "availability_set", "name": "web", "update_domains": 3}
    fabric = make_fabric(fleet({**web, "vms": 6}), store=store, clock=clock)
    fabric.submit(region(wave_hosts=2))
    store.close()
    store = SQLiteStore(tmp_path / "f.db")
    again = make_fabric(fleet({**web, "vms": 9}), store=store, clock=clock)
    again.advance(25 * MINUTE)  # the first wave is over: the next is not cut from this fleet
    (rollout,) = again.rollouts()
    assert rollout.done
    (entry,) = [h for h in again.history(limit=100) if h.kind == "rollout.abandoned"]
    assert entry.detail["reason"] == "the fleet has 9 VMs, the rollout was planned on 6"
    assert not [o for o in again.operations() if o.state.value != "completed"]
    store.close()
