"""Scheduled Events are enabled by a scope's first request and disabled after 24 h idle (L7)."""

from __future__ import annotations

import pytest

from forewarn.contract import EventStatus
from forewarn.fabric import Fabric
from tests.fabric.conftest import FabricFactory
from tests.support.fabrics import DAY, MINUTE, history_kinds, observable, only_event, submit


def request(fabric: Fabric, name: str) -> bool:
    return fabric.note_request(fabric.topology.vm(name))


def test_disabled_scope_runs_operations_without_events(lazy_fabric: Fabric) -> None:
    op = submit(lazy_fabric, "user-reboot", "web-0")
    assert lazy_fabric.view("web").events == ()
    assert lazy_fabric.view("web").incarnation == 1
    assert lazy_fabric.operation(op.id).state.value == "started"
    assert lazy_fabric.vm_status("web-0") == "rebooting"
    lazy_fabric.advance(10 * MINUTE)
    assert lazy_fabric.operation(op.id).state.value == "completed"
    assert lazy_fabric.view("web").incarnation == 1


def test_disabled_spot_eviction_deletes_without_notice(lazy_fabric: Fabric) -> None:
    submit(lazy_fabric, "spot-eviction", "workers_2")
    lazy_fabric.advance(MINUTE)
    assert lazy_fabric.is_deleted("workers_2")
    assert lazy_fabric.view("workers").incarnation == 1


def test_first_request_of_any_vm_enables_its_whole_scope(lazy_fabric: Fabric) -> None:
    assert not lazy_fabric.is_enabled("web")
    assert request(lazy_fabric, "web-4") is True
    assert request(lazy_fabric, "web-4") is False
    assert request(lazy_fabric, "web-1") is False
    assert lazy_fabric.is_enabled("web")
    assert not lazy_fabric.is_enabled("jumpbox")
    assert history_kinds(lazy_fabric) == ["scope.enabled"]
    assert lazy_fabric.view("web").incarnation == 1
    only_event(lazy_fabric, submit(lazy_fabric, "user-reboot", "web-0"))
    submit(lazy_fabric, "user-reboot", "jumpbox")
    assert lazy_fabric.view("jumpbox").events == ()


def test_host_maintenance_notifies_only_enabled_scopes(lazy_fabric: Fabric) -> None:
    request(lazy_fabric, "FrontEnd_IN_1")  # enables shop from a VM not on host-1
    op = submit(lazy_fabric, "host-update", host="host-1")
    (event,) = lazy_fabric.events()
    assert (event.scope_id, event.resources) == ("shop", ("FrontEnd_IN_0",))
    assert lazy_fabric.view("shop").events[0].status is EventStatus.SCHEDULED
    lazy_fabric.approve(lazy_fabric.topology.vm("BackEnd_IN_0"), [event.id])
    assert lazy_fabric.operation(op.id).state.value == "started"
    assert {lazy_fabric.vm_status(n) for n in op.vms} == {"frozen"}


@pytest.mark.parametrize(("idle", "notified"), [(DAY - 1, True), (DAY, False), (2 * DAY, False)])
def test_scope_is_disabled_after_a_day_without_requests(
    lazy_fabric: Fabric, idle: float, notified: bool
) -> None:
    request(lazy_fabric, "jumpbox")
    lazy_fabric.advance(idle)
    assert lazy_fabric.is_enabled("jumpbox") is notified
    submit(lazy_fabric, "platform-reboot", "jumpbox")
    assert len(lazy_fabric.view("jumpbox").events) == int(notified)


def test_requests_keep_a_scope_enabled_and_a_late_one_re_enables_it(lazy_fabric: Fabric) -> None:
    assert request(lazy_fabric, "web-0")
    for _ in range(3):
        lazy_fabric.advance(DAY - MINUTE)
        assert request(lazy_fabric, "web-5") is False
    lazy_fabric.advance(DAY)
    assert not lazy_fabric.is_enabled("web")
    assert request(lazy_fabric, "web-2") is True
    assert history_kinds(lazy_fabric).count("scope.enabled") == 2


def test_idle_timeout_follows_the_time_scale(build: FabricFactory) -> None:
    fabric = build(enablement="on-first-request", time_scale=60)
    request(fabric, "web-0")
    fabric.advance(DAY / 60 - 1)
    assert fabric.is_enabled("web")
    fabric.advance(1)
    assert not fabric.is_enabled("web")


def test_always_enabled_scopes_notify_without_requests(fabric: Fabric) -> None:
    assert all(fabric.is_enabled(s) for s in fabric.topology.scopes)
    before = observable(fabric)
    assert request(fabric, "web-0") is False
    assert fabric.view("web") == before["views"]["web"]
    assert "scope.enabled" not in history_kinds(fabric)
