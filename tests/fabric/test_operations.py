"""What each operation turns into: type, source, notice, duration (CONTRACT L1, L2, L6, L9)."""

from __future__ import annotations

from typing import Any

import pytest

from forewarn.contract import EventSource, EventStatus, EventType
from forewarn.fabric import Fabric, InvalidOperation, OperationRequest
from forewarn.fleet import UnknownName
from tests.fabric.conftest import FabricFactory
from tests.support.fabrics import (
    DAY,
    MINUTE,
    T0,
    fleet,
    incarnations,
    live,
    observable,
    only_event,
    submit,
)

#: kind, VM, event type, source, notice (s), DurationInSeconds.
CATALOGUE_ROWS = [
    ("user-reboot", "web-0", EventType.REBOOT, EventSource.USER, 15 * MINUTE, -1),
    ("user-redeploy", "web-0", EventType.REDEPLOY, EventSource.USER, 10 * MINUTE, -1),
    ("live-migration", "web-0", EventType.FREEZE, EventSource.PLATFORM, 15 * MINUTE, 5),
    ("host-update", "web-0", EventType.FREEZE, EventSource.PLATFORM, 15 * MINUTE, 9),
    ("platform-reboot", "web-0", EventType.REBOOT, EventSource.PLATFORM, 15 * MINUTE, -1),
    ("platform-redeploy", "web-0", EventType.REDEPLOY, EventSource.PLATFORM, 10 * MINUTE, -1),
    ("spot-eviction", "workers_0", EventType.PREEMPT, EventSource.PLATFORM, 30, -1),
    ("scale-in", "workers_0", EventType.TERMINATE, EventSource.USER, 5 * MINUTE, -1),
]
KIND_IDS = [row[0] for row in CATALOGUE_ROWS]


@pytest.mark.parametrize(
    ("kind", "vm", "event_type", "source", "notice", "duration"), CATALOGUE_ROWS, ids=KIND_IDS
)
def test_operation_creates_one_event_with_exactly_the_minimum_notice(
    fabric: Fabric,
    kind: str,
    vm: str,
    event_type: EventType,
    source: EventSource,
    notice: float,
    duration: int,
) -> None:
    scope = fabric.topology.vm(vm).scope_id
    op = submit(fabric, kind, vm)
    (event,) = fabric.view(scope).events
    assert event.event_id == only_event(fabric, op).id
    assert event.event_id == event.event_id.upper()
    assert (event.event_type, event.source, event.status) == (
        event_type,
        source.value,
        EventStatus.SCHEDULED,
    )
    assert event.not_before == T0 + notice
    assert event.duration_seconds == duration
    assert event.resources == (vm,)
    assert event.description
    assert incarnations(fabric) == {"web": 1, "workers": 1, "jumpbox": 1, "shop": 1} | {scope: 2}


@pytest.mark.parametrize("timeout", [5, 10, 15])
def test_scale_in_notice_is_the_scope_terminate_timeout(build: FabricFactory, timeout: int) -> None:
    fabric = build(
        fleet(
            {
                "kind": "scale_set",
                "name": "set",
                "vms": 2,
                "terminate_notification": {"timeout_minutes": timeout},
            }
        )
    )
    op = submit(fabric, "scale-in", "set_1")
    assert only_event(fabric, op).not_before == T0 + timeout * MINUTE


def test_scale_in_names_one_scale_set_at_a_time(build: FabricFactory) -> None:
    fabric = build(
        fleet(
            {"kind": "scale_set", "name": "a", "vms": 1, "terminate_notification": {}},
            {
                "kind": "scale_set",
                "name": "b",
                "vms": 1,
                "terminate_notification": {"timeout_minutes": 15},
            },
        )
    )
    before = observable(fabric)
    with pytest.raises(InvalidOperation, match="one scale set"):
        submit(fabric, "scale-in", "a_0", "b_0")
    assert observable(fabric) == before


def test_scale_in_across_placement_groups_is_one_operation(build: FabricFactory) -> None:
    fabric = build(
        fleet(
            {
                "kind": "scale_set",
                "name": "set",
                "vms": 2,
                "placement_groups": 2,
                "terminate_notification": {"timeout_minutes": 12},
            }
        )
    )
    op = submit(fabric, "scale-in", "set_0", "set_1")
    assert [(e.scope_id, e.not_before) for e in live(fabric, op)] == [
        ("set/pg0", T0 + 12 * MINUTE),
        ("set/pg1", T0 + 12 * MINUTE),
    ]


@pytest.mark.parametrize(
    ("kind", "vm", "notice"),
    [
        ("user-reboot", "web-0", 15.0),
        ("platform-redeploy", "web-0", 10.0),
        ("spot-eviction", "workers_0", 0.5),
        ("scale-in", "workers_0", 5.0),
    ],
)
def test_time_scale_divides_notice(build: FabricFactory, kind: str, vm: str, notice: float) -> None:
    fabric = build(time_scale=60)
    op = submit(fabric, kind, vm)
    assert only_event(fabric, op).not_before == T0 + notice


def test_time_scale_keeps_the_announced_duration(build: FabricFactory) -> None:
    fabric = build(time_scale=60)
    op = submit(fabric, "host-update", "web-0")
    assert only_event(fabric, op).duration_seconds == 9  # as production announces it
    assert fabric.operation(op.id).impact_seconds == 9 / 60  # while the freeze is scaled


def test_degraded_hardware_is_a_redeploy_days_ahead(fabric: Fabric) -> None:
    event = only_event(fabric, submit(fabric, "degraded-hardware", "web-0"))
    assert (event.event_type, event.source) == (EventType.REDEPLOY, EventSource.PLATFORM)
    assert DAY <= event.not_before - T0 <= 7 * DAY
    assert event.duration_seconds == -1


@pytest.mark.parametrize("notice", [10 * MINUTE, DAY, 3 * DAY, 7 * DAY - 1, 7 * DAY])
def test_degraded_hardware_accepts_notice_overrides_up_to_seven_days(
    fabric: Fabric, notice: float
) -> None:
    op = submit(fabric, "degraded-hardware", "web-0", notice_seconds=notice)
    assert only_event(fabric, op).not_before == T0 + notice


@pytest.mark.parametrize(
    ("notice", "message"),
    [(7 * DAY + 1, "more than 7 days"), (10 * MINUTE - 1, "below the minimum of 600")],
)
def test_degraded_hardware_rejects_notice_outside_its_bounds(
    fabric: Fabric, notice: float, message: str
) -> None:
    before = observable(fabric)
    with pytest.raises(InvalidOperation, match=message):
        submit(fabric, "degraded-hardware", "web-2", notice_seconds=notice)
    assert observable(fabric) == before


@pytest.mark.parametrize(
    ("kind", "vm", "notice"),
    [("user-reboot", "web-0", 2 * DAY), ("spot-eviction", "workers_1", 600)],
)
def test_longer_notice_overrides_are_accepted(
    fabric: Fabric, kind: str, vm: str, notice: float
) -> None:
    op = submit(fabric, kind, vm, notice_seconds=notice)
    assert only_event(fabric, op).not_before == T0 + notice


def test_description_and_duration_overrides(fabric: Fabric) -> None:
    op = submit(fabric, "live-migration", "web-0", description="", duration_seconds=0)
    event = only_event(fabric, op)
    assert (event.description, event.duration_seconds) == ("", 0)


def test_hardware_failure_is_created_started(fabric: Fabric) -> None:
    op = submit(fabric, "hardware-failure", "jumpbox")
    (event,) = fabric.view("jumpbox").events
    assert event.status is EventStatus.STARTED
    assert (event.event_type, event.source) == (EventType.REDEPLOY, "Platform")
    assert event.event_id == only_event(fabric, op).id
    assert fabric.view("jumpbox").incarnation == 2
    assert fabric.vm_status("jumpbox") == "redeploying"


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("user-reboot", EventStatus.STARTED), ("user-redeploy", EventStatus.SCHEDULED)],
)
def test_auto_approve_policy_creates_user_reboot_started(
    build: FabricFactory, kind: str, expected: EventStatus
) -> None:
    fabric = build(
        fleet({"kind": "availability_set", "name": "app", "vms": 2, "auto_approve": ["reboot"]})
    )
    submit(fabric, kind, "app-1")
    (event,) = fabric.view("app").events
    assert event.status is expected
    assert fabric.view("app").incarnation == 2


@pytest.mark.parametrize("terminate", [None, {"enabled": False}])
def test_scale_in_without_terminate_notification_deletes_with_no_event(
    build: FabricFactory, terminate: dict[str, Any] | None
) -> None:
    scope: dict[str, Any] = {"kind": "scale_set", "name": "set", "vms": 2}
    if terminate is not None:
        scope["terminate_notification"] = terminate
    fabric = build(fleet(scope))
    submit(fabric, "scale-in", "set_0")
    assert fabric.view("set").events == ()
    assert fabric.view("set").incarnation == 1
    fabric.advance(MINUTE)
    assert fabric.is_deleted("set_0")
    assert not fabric.is_deleted("set_1")
    assert fabric.view("set").incarnation == 1


@pytest.mark.parametrize(
    ("request_fields", "error", "message"),
    [
        ({"kind": "spot-eviction", "vms": ("web-0",)}, InvalidOperation, "needs Spot VMs"),
        ({"kind": "scale-in", "vms": ("web-0",)}, InvalidOperation, "scale-set instances"),
        ({"kind": "user-reboot", "vms": ("web-0", "web-1")}, InvalidOperation, "one VM"),
        ({"kind": "user-reboot", "scope": "jumpbox"}, InvalidOperation, "not a scope"),
        ({"kind": "scale-in", "scope": "workers"}, InvalidOperation, "not a scope"),
        ({"kind": "reboot-please", "vms": ("web-0",)}, InvalidOperation, "unknown operation"),
        ({"kind": "user-reboot"}, InvalidOperation, "exactly one target"),
        (
            {"kind": "host-update", "vms": ("web-0",), "host": "host-1"},
            InvalidOperation,
            "exactly one target",
        ),
        ({"kind": "user-reboot", "vms": ("web-0", "WEB-0")}, InvalidOperation, "named twice"),
        ({"kind": "user-reboot", "vms": ("ghost",)}, UnknownName, "ghost"),
        ({"kind": "host-update", "host": "host-9"}, UnknownName, "host-9"),
        ({"kind": "platform-reboot", "scope": "nope"}, UnknownName, "nope"),
        (
            {"kind": "user-reboot", "vms": ("web-0",), "notice_seconds": 899},
            InvalidOperation,
            "below the minimum of 900",
        ),
        (
            {"kind": "hardware-failure", "vms": ("web-0",), "notice_seconds": 900},
            InvalidOperation,
            "takes no notice",
        ),
        (
            {"kind": "live-migration", "vms": ("web-0",), "duration_seconds": -2},
            InvalidOperation,
            "duration_seconds",
        ),
    ],
)
def test_invalid_requests_raise_and_change_nothing(
    fabric: Fabric, request_fields: dict[str, Any], error: type[Exception], message: str
) -> None:
    submit(fabric, "live-migration", "web-3")
    before = observable(fabric)
    with pytest.raises(error, match=message):
        fabric.submit(OperationRequest(**request_fields))
    assert observable(fabric) == before


def test_vm_names_in_requests_ignore_case(fabric: Fabric) -> None:
    op = submit(fabric, "user-reboot", "frontend_in_0")
    assert only_event(fabric, op).resources == ("FrontEnd_IN_0",)


PREVIEW_FLEET = {"kind": "availability_set", "name": "app", "vms": 12, "preview_limit": True}


def test_preview_limit_rejects_the_eleventh_user_operation(build: FabricFactory) -> None:
    fabric = build(fleet(PREVIEW_FLEET, {**PREVIEW_FLEET, "name": "other"}))
    ops = [submit(fabric, ("user-reboot", "user-redeploy")[i % 2], f"app-{i}") for i in range(10)]
    submit(fabric, "platform-reboot", "app-0")  # platform work does not count
    before = observable(fabric)
    with pytest.raises(InvalidOperation, match="preview limit 10"):
        submit(fabric, "user-reboot", "app-10")
    assert observable(fabric) == before
    submit(fabric, "user-reboot", "other-0")  # the limit is per scope
    fabric.cancel_event(only_event(fabric, ops[0]).id)
    submit(fabric, "user-reboot", "app-10")  # a slot freed up


def test_preview_limit_is_off_by_default(build: FabricFactory) -> None:
    fabric = build(fleet({**PREVIEW_FLEET, "preview_limit": False}))
    for i in range(11):
        submit(fabric, "user-reboot", f"app-{i}")
    assert len(fabric.view("app").events) == 11
