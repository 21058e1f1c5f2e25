"""What the run-time policies make the platform do: allInstancesDown approves an event
that takes every VM of its scope down, an OS image notification gives a reimage its
Reboot event, and deletes with the same NotBefore wait for one another (the terminate
coupling); a changed policy is written like any change."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from forewarn.contract import EventStatus, EventType
from forewarn.fabric import Fabric, OperationState
from forewarn.store import SQLiteStore
from tests.support.fabrics import MINUTE, fleet, live, make_fabric, submit

SPEC = fleet(
    {"kind": "standalone", "name": "solo"},
    {"kind": "availability_set", "name": "web", "vms": 3},
    {
        "kind": "scale_set",
        "name": "pool",
        "vms": 3,
        "terminate_notification": {"enabled": True, "timeout_minutes": 5},
    },
)


def build() -> Fabric:
    return make_fabric(SPEC, enablement="always")


def set_policy(fabric: Fabric, scope_id: str, **fields: object) -> None:
    policy = replace(fabric.policy(scope_id), **fields)  # type: ignore[arg-type]
    fabric.set_policy({scope_id: policy}, via="arm")


def approve(fabric: Fabric, vm: str, event_id: str) -> None:
    fabric.approve(fabric.topology.vms[vm], [event_id])


def test_deletes_with_the_same_not_before_wait_for_each_other() -> None:
    fabric = build()
    first = submit(fabric, "scale-in", "pool_0")
    second = submit(fabric, "scale-in", "pool_1")
    [e1], [e2] = live(fabric, first), live(fabric, second)
    assert e1.not_before == e2.not_before
    approve(fabric, "pool_0", e1.id)
    assert fabric.operation(first.id).state is OperationState.SCHEDULED  # held by pool_1's
    approve(fabric, "pool_1", e2.id)
    assert fabric.operation(first.id).state is OperationState.STARTED
    assert fabric.operation(second.id).state is OperationState.STARTED


def test_a_delete_with_another_not_before_is_not_held() -> None:
    fabric = build()
    submit(fabric, "scale-in", "pool_0")  # pending, unapproved
    fabric.advance(MINUTE)
    later = submit(fabric, "scale-in", "pool_1")
    [event] = live(fabric, later)
    approve(fabric, "pool_1", event.id)
    assert fabric.operation(later.id).state is OperationState.STARTED


def test_all_instances_down_approves_an_event_that_takes_the_whole_scope_down() -> None:
    fabric = build()
    set_policy(fabric, "solo", auto_approve_all_instances_down=True)
    set_policy(fabric, "web", auto_approve_all_instances_down=True)
    op = submit(fabric, "platform-reboot", "solo")
    [event] = live(fabric, op)
    assert event.status is EventStatus.STARTED and event.approved_by == "platform"
    approved = [h for h in fabric.history() if h.kind == "event.approved"]
    assert approved[-1].detail == {"by": "platform", "via": "policy"}
    # One VM of three is not all instances: it waits for approval.
    partial = submit(fabric, "platform-reboot", "web-0")
    assert [e.status for e in live(fabric, partial)] == [EventStatus.SCHEDULED]
    # A Freeze does not take a VM down.
    freeze = submit(fabric, "live-migration", "solo")
    assert [e.status for e in live(fabric, freeze)] == [EventStatus.SCHEDULED]


def test_all_instances_down_is_off_by_default() -> None:
    fabric = build()
    op = submit(fabric, "platform-reboot", "solo")
    assert [e.status for e in live(fabric, op)] == [EventStatus.SCHEDULED]


def test_a_reimage_gets_a_reboot_event_only_with_the_os_image_notification() -> None:
    fabric = build()
    silent = submit(fabric, "reimage", "pool_2")
    assert live(fabric, silent) == [] and fabric.operation(silent.id).unnotified == ("pool_2",)
    fabric.advance(20 * MINUTE)
    set_policy(fabric, "pool", os_image_notification=True, os_image_timeout_minutes=7)
    op = submit(fabric, "reimage", "pool_0")
    [event] = live(fabric, op)
    assert event.event_type is EventType.REBOOT and event.status is EventStatus.SCHEDULED
    assert "reimaged" in event.description
    assert event.not_before - event.created_at == 7 * MINUTE
    approve(fabric, "pool_0", event.id)
    assert fabric.operation(op.id).state is OperationState.STARTED


def test_a_reimage_is_not_auto_approved_by_the_user_reboot_policy() -> None:
    fabric = build()
    set_policy(fabric, "solo", auto_approve_user_reboot=True, os_image_notification=True)
    op = submit(fabric, "reimage", "solo")
    assert [e.status for e in live(fabric, op)] == [EventStatus.SCHEDULED]


def test_a_changed_policy_is_read_back_after_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "forewarn.db"
    store = SQLiteStore(db)
    fabric = make_fabric(SPEC, store=store, enablement="always")
    set_policy(fabric, "pool", terminate_timeout_minutes=11)
    fabric.close()
    store.close()
    again = make_fabric(SPEC, store=SQLiteStore(db), enablement="always")
    assert again.policy("pool").terminate_timeout_minutes == 11
    assert again.topology.scopes["pool"].policy.terminate_timeout_minutes == 5  # the file's
    for vm in ("pool_0", "pool_1"):  # the first event's incarnation step keeps it
        [event] = live(again, submit(again, "scale-in", vm))
        assert event.not_before - event.created_at == 11 * MINUTE
