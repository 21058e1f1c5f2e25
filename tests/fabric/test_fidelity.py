"""Fidelity rules: a deleted VM leaves every event; one user operation per VM at a time;
announced durations stay within what the platform can announce."""

from __future__ import annotations

import pytest

from forewarn.fabric import Conflict, Fabric, InvalidOperation
from tests.fabric.conftest import FabricFactory
from tests.support.fabrics import fleet, history_kinds, live, observable, only_event, submit

#: One host, so that scale-set VMs share a host and an update domain (and so an event).
SPOT_SET = {"kind": "scale_set", "name": "set", "vms": 3, "spot": True, "update_domains": 1}
ONE_HOST = {"hosts": 1}


def _evict(fabric: Fabric, name: str) -> None:
    """Spot-evict ``name`` and let the eviction run to its end (the VM is deleted)."""
    op = submit(fabric, "spot-eviction", name)
    fabric.advance(30)  # NotBefore: the Preempt starts
    fabric.advance(op.hold_seconds + 1)
    assert fabric.is_deleted(name)


def test_a_deleted_vm_leaves_the_resources_of_other_events(build: FabricFactory) -> None:
    fabric = build(fleet(SPOT_SET, **ONE_HOST))
    maintenance = submit(fabric, "host-update", host="host-1")
    event = only_event(fabric, maintenance)
    assert event.resources == ("set_0", "set_1", "set_2")
    before = fabric.view("set").incarnation
    _evict(fabric, "set_1")
    after = only_event(fabric, maintenance)
    assert after.id == event.id
    assert after.resources == ("set_0", "set_2")
    assert fabric.view("set").incarnation > before
    assert [e.resources for e in fabric.view("set").events] == [("set_0", "set_2")]
    assert "event.resources_changed" in history_kinds(fabric, event_id=event.id)
    # The event goes on for the VMs that are left.
    fabric.approve_event(event.id)
    assert only_event(fabric, maintenance).status.value == "Started"
    assert only_event(fabric, maintenance).resources == ("set_0", "set_2")


def test_an_event_left_with_no_vm_is_removed_and_holds_nothing_up(
    build: FabricFactory,
) -> None:
    web = {"kind": "availability_set", "name": "web", "vms": 1}
    one = {**SPOT_SET, "vms": 1}
    fabric = build(fleet(web, one, **ONE_HOST))
    maintenance = submit(fabric, "host-update", host="host-1")
    events = {e.scope_id: e for e in live(fabric, maintenance)}
    assert set(events) == {"web", "set"}
    _evict(fabric, "set_0")
    assert [e.scope_id for e in live(fabric, maintenance)] == ["web"]
    assert fabric.view("set").events == ()
    assert "event.canceled" in history_kinds(fabric, event_id=events["set"].id)
    # Only the web event is left to approve: approving it starts the operation.
    fabric.approve_event(events["web"].id)
    assert only_event(fabric, maintenance).status.value == "Started"
    assert fabric.operation(maintenance.id).spared_vms == ("set_0",)


@pytest.mark.parametrize("second", ["user-reboot", "user-redeploy"])
def test_a_second_user_operation_on_a_vm_is_a_conflict(fabric: Fabric, second: str) -> None:
    first = submit(fabric, "user-reboot", "web-0")
    event = only_event(fabric, first)
    before = observable(fabric)
    with pytest.raises(Conflict) as raised:
        submit(fabric, second, "web-0")
    assert event.id in str(raised.value) and first.id in str(raised.value)
    assert "web-0" in str(raised.value)
    assert observable(fabric) == before
    submit(fabric, "user-reboot", "web-1")  # another VM is free
    submit(fabric, "platform-reboot", "web-0")  # platform work is not a user operation


def test_a_user_operation_is_allowed_again_once_the_first_is_over(fabric: Fabric) -> None:
    first = submit(fabric, "user-reboot", "web-0")
    fabric.approve_event(only_event(fabric, first).id)  # Started: the reboot is under way
    with pytest.raises(Conflict):
        submit(fabric, "user-redeploy", "web-0")
    fabric.advance(first.impact_seconds + 1)  # rebooted; the event still shows Started
    assert only_event(fabric, first).status.value == "Started"
    submit(fabric, "user-redeploy", "web-0")


def test_canceling_the_first_user_operation_frees_the_vm(fabric: Fabric) -> None:
    first = submit(fabric, "user-reboot", "web-0")
    fabric.cancel_event(only_event(fabric, first).id)
    submit(fabric, "user-reboot", "web-0")


@pytest.mark.parametrize("duration", [10**22, 7 * 24 * 3600 + 1, -2])
def test_an_announced_duration_is_bounded(fabric: Fabric, duration: int) -> None:
    before = observable(fabric)
    with pytest.raises(InvalidOperation, match=r"-1 \(unknown\) or 0 to 604800 \(7 days\)"):
        submit(fabric, "host-update", host="host-1", duration_seconds=duration)
    assert observable(fabric) == before


def test_the_longest_announced_duration_is_accepted(fabric: Fabric) -> None:
    op = submit(fabric, "live-migration", "web-0", duration_seconds=7 * 24 * 3600)
    assert only_event(fabric, op).duration_seconds == 7 * 24 * 3600
