"""Scheduled → Started → removed, cancel, complete, force start (CONTRACT L3, L5, D1)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from forewarn.contract import EventStatus
from forewarn.fabric import Fabric, InvalidOperation, InvalidTransition, NotFoundError
from tests.support.fabrics import (
    DAY,
    HOUR,
    MINUTE,
    T0,
    history_kinds,
    observable,
    only_event,
    status,
    submit,
)

#: kind, VM, notice, hold (how long the event stays Started), impact status.
TIMINGS = [
    ("user-reboot", "web-0", 15 * MINUTE, 10 * MINUTE, "rebooting"),
    ("user-redeploy", "web-0", 10 * MINUTE, 10 * MINUTE, "redeploying"),
    ("live-migration", "web-0", 15 * MINUTE, 5 * MINUTE, "frozen"),
    ("host-update", "jumpbox", 15 * MINUTE, 5 * MINUTE, "frozen"),
    ("platform-reboot", "FrontEnd_IN_0", 15 * MINUTE, 10 * MINUTE, "rebooting"),
    ("platform-redeploy", "web-5", 10 * MINUTE, 10 * MINUTE, "redeploying"),
    ("spot-eviction", "workers_0", 30, MINUTE, "evicting"),
    ("scale-in", "workers_3", 5 * MINUTE, MINUTE, "terminating"),
]
TIMING_IDS = [row[0] for row in TIMINGS]
DAY_AND_A_BIT = DAY + HOUR


@pytest.mark.parametrize(("kind", "vm", "notice", "hold", "impact"), TIMINGS, ids=TIMING_IDS)
def test_event_starts_at_not_before_and_is_removed_after_hold(
    fabric: Fabric, kind: str, vm: str, notice: float, hold: float, impact: str
) -> None:
    scope = fabric.topology.vm(vm).scope_id
    event_id = only_event(fabric, submit(fabric, kind, vm)).id
    fabric.advance(notice - 1)
    assert status(fabric, event_id) is EventStatus.SCHEDULED
    assert fabric.vm_status(vm) == "running"
    assert fabric.view(scope).incarnation == 2
    fabric.advance(1)
    assert status(fabric, event_id) is EventStatus.STARTED
    assert fabric.view(scope).incarnation == 3
    fabric.advance(hold - 1)
    assert status(fabric, event_id) is EventStatus.STARTED
    fabric.advance(1)
    assert status(fabric, event_id) is None
    assert fabric.view(scope).events == ()
    assert fabric.view(scope).incarnation == 4
    assert history_kinds(fabric, event_id=event_id) == [
        "event.scheduled",
        "event.started",
        "event.completed",
    ]


@pytest.mark.parametrize(
    ("kind", "vm", "impact", "status_during"),
    [
        ("user-reboot", "web-0", 2 * MINUTE, "rebooting"),
        ("live-migration", "web-0", 5, "frozen"),
        ("host-update", "web-0", 9, "frozen"),
        ("platform-redeploy", "web-0", 5 * MINUTE, "redeploying"),
    ],
)
def test_vm_status_shows_the_impact_while_it_lasts(
    fabric: Fabric, kind: str, vm: str, impact: float, status_during: str
) -> None:
    fabric.start_event(only_event(fabric, submit(fabric, kind, vm)).id)
    assert fabric.vm_status(vm) == status_during
    assert fabric.vm_status("web-1") == "running"
    fabric.advance(impact - 0.5)
    assert fabric.vm_status(vm) == status_during
    fabric.advance(0.5)
    assert fabric.vm_status(vm) == "running"


@pytest.mark.parametrize(
    ("kind", "vm"), [("spot-eviction", "workers_1"), ("scale-in", "workers_2")]
)
def test_preempt_and_terminate_delete_the_vm_at_the_end(fabric: Fabric, kind: str, vm: str) -> None:
    op = submit(fabric, kind, vm)
    fabric.start_event(only_event(fabric, op).id)
    fabric.advance(MINUTE - 1)
    assert not fabric.is_deleted(vm)
    fabric.advance(1)
    assert fabric.is_deleted(vm)
    assert fabric.vm_status(vm) == "deleted"
    assert fabric.view("workers").events == ()
    assert fabric.operation(op.id).state.value == "completed"
    assert "vm.deleted" in history_kinds(fabric, operation_id=op.id)
    with pytest.raises(InvalidOperation, match="has been deleted"):
        submit(fabric, "user-reboot", vm)


def test_cancel_removes_a_scheduled_event_with_no_impact(fabric: Fabric) -> None:
    op = submit(fabric, "platform-reboot", "web-2")
    event_id = only_event(fabric, op).id
    fabric.cancel_event(event_id.lower())
    assert fabric.view("web").events == ()
    assert fabric.view("web").incarnation == 3
    fabric.advance(15 * MINUTE)
    assert fabric.vm_status("web-2") == "running"
    assert fabric.view("web").incarnation == 3
    assert fabric.operation(op.id).state.value == "canceled"
    assert history_kinds(fabric, operation_id=op.id) == [
        "operation.created",
        "event.scheduled",
        "event.canceled",
        "operation.canceled",
    ]


def test_canceled_preempt_does_not_delete_the_vm(fabric: Fabric) -> None:
    fabric.cancel_event(only_event(fabric, submit(fabric, "spot-eviction", "workers_0")).id)
    fabric.advance(10 * MINUTE)
    assert not fabric.is_deleted("workers_0")


@pytest.mark.parametrize("action", ["cancel_event", "start_event"])
def test_started_event_cannot_be_canceled_or_started_again(fabric: Fabric, action: str) -> None:
    event_id = only_event(fabric, submit(fabric, "user-reboot", "web-0")).id
    fabric.start_event(event_id)
    before = observable(fabric)
    with pytest.raises(InvalidTransition, match="it is Started"):
        getattr(fabric, action)(event_id)
    assert observable(fabric) == before


def test_complete_removes_a_started_event(fabric: Fabric) -> None:
    op = submit(fabric, "user-redeploy", "web-4")
    event_id = only_event(fabric, op).id
    before = observable(fabric)
    with pytest.raises(InvalidTransition, match="only a Started event can be completed"):
        fabric.complete_event(event_id)
    assert observable(fabric) == before
    fabric.start_event(event_id)
    fabric.complete_event(event_id)
    assert fabric.view("web").events == ()
    assert fabric.view("web").incarnation == 4
    assert fabric.operation(op.id).state.value == "completed"


def test_start_event_forces_the_start_before_not_before(fabric: Fabric) -> None:
    op = submit(fabric, "platform-reboot", "BackEnd_IN_0")
    fabric.start_event(only_event(fabric, op).id)
    (event,) = fabric.view("shop").events
    assert event.status is EventStatus.STARTED
    assert fabric.clock.now() == T0
    assert fabric.vm_status("BackEnd_IN_0") == "rebooting"
    assert fabric.view("shop").incarnation == 3


@pytest.mark.parametrize("action", ["cancel_event", "complete_event", "start_event"])
def test_unknown_and_removed_events_are_not_found(fabric: Fabric, action: str) -> None:
    event_id = only_event(fabric, submit(fabric, "user-reboot", "web-0")).id
    fabric.cancel_event(event_id)
    before = observable(fabric)
    for missing in (event_id, "00000000-0000-0000-0000-000000000000"):
        with pytest.raises(NotFoundError):
            getattr(fabric, action)(missing)
    assert observable(fabric) == before


def test_incarnation_starts_at_one_and_counts_only_visible_changes(fabric: Fabric) -> None:
    assert {fabric.view(s).incarnation for s in fabric.topology.scopes} == {1}
    web0 = fabric.topology.vm("web-0")
    steps: list[tuple[Callable[[], object], int]] = [
        (lambda: fabric.note_request(web0), 1),
        (lambda: submit(fabric, "user-reboot", "web-0"), 2),
        (lambda: submit(fabric, "user-reboot", "jumpbox"), 2),  # another scope's document
        (lambda: fabric.advance(60), 2),
        (lambda: submit(fabric, "live-migration", "web-1"), 3),
        (lambda: fabric.advance(14 * MINUTE), 4),  # the reboot starts
        (lambda: fabric.advance(MINUTE), 5),  # the migration starts
        (lambda: fabric.advance(5 * MINUTE), 6),  # the migration is removed
        (lambda: fabric.advance(4 * MINUTE), 7),  # the reboot is removed
        (lambda: fabric.advance(DAY_AND_A_BIT), 7),
    ]
    for step, expected in steps:
        step()
        assert fabric.view("web").incarnation == expected


def test_timers_fire_in_order_even_after_one_big_jump(fabric: Fabric) -> None:
    first = submit(fabric, "spot-eviction", "workers_0")
    second = submit(fabric, "user-reboot", "web-0")
    assert fabric.advance(DAY_AND_A_BIT) == T0 + DAY_AND_A_BIT
    assert fabric.is_deleted("workers_0")
    starts = [h for h in fabric.history(limit=10_000) if h.kind == "operation.started"]
    assert [(h.operation_id, h.at) for h in starts] == [
        (first.id, T0 + 30),
        (second.id, T0 + 15 * MINUTE),
    ]
    assert fabric.next_due() is None
