"""Approving events from a VM (CONTRACT P3-P6, S3, S5)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from forewarn.contract import EventStatus
from forewarn.fabric import EventNotVisible, Fabric
from forewarn.fleet import VM
from tests.fabric.conftest import FabricFactory
from tests.support.fabrics import fleet, history_kinds, live, observable, only_event, status, submit

GHOST_ID = "5DD55B64-45AD-49D3-BBC9-6E8B5A3E0B4F"


@pytest.mark.parametrize("approver", ["web-0", "web-3", "web-5"])
def test_any_vm_of_the_scope_approves_and_the_event_starts(
    fabric: Fabric, vm: Callable[[str], VM], approver: str
) -> None:
    event_id = only_event(fabric, submit(fabric, "user-reboot", "web-0")).id
    approved = fabric.approve(vm(approver), [event_id])
    assert [e.id for e in approved] == [event_id]
    assert status(fabric, event_id) is EventStatus.STARTED
    assert fabric.view("web").incarnation == 3
    assert fabric.vm_status("web-0") == "rebooting"
    assert history_kinds(fabric, event_id=event_id) == [
        "event.scheduled",
        "event.approved",
        "event.started",
    ]
    detail = fabric.history(limit=10_000, event_id=event_id)[1].detail
    assert detail == {"by": approver, "via": "endpoint"}


def test_ids_are_compared_ignoring_case(fabric: Fabric, vm: Callable[[str], VM]) -> None:
    event_id = only_event(fabric, submit(fabric, "live-migration", "FrontEnd_IN_1")).id
    fabric.approve(vm("BackEnd_IN_0"), [event_id.lower()])
    assert status(fabric, event_id) is EventStatus.STARTED


def test_approval_alone_does_not_change_the_document(
    fabric: Fabric, vm: Callable[[str], VM]
) -> None:
    op = submit(fabric, "host-update", host="host-3")
    web_event = next(e for e in live(fabric, op) if e.scope_id == "web")
    view = fabric.view("web")
    fabric.approve(vm("web-1"), [web_event.id])
    assert fabric.view("web") == view
    assert status(fabric, web_event.id) is EventStatus.SCHEDULED


def test_repeated_and_late_approvals_are_accepted_and_change_nothing(
    fabric: Fabric, vm: Callable[[str], VM]
) -> None:
    event_id = only_event(fabric, submit(fabric, "user-reboot", "web-0")).id
    fabric.approve(vm("web-0"), [event_id, event_id.lower()])
    after_first = observable(fabric)
    fabric.approve(vm("web-1"), [event_id])  # already approved and Started (P3)
    assert observable(fabric) == after_first


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param("other-scope", id="event-of-another-scope"),
        pytest.param("ghost", id="unknown-id"),
        pytest.param("removed", id="removed-event"),
    ],
)
def test_an_invisible_id_rejects_the_whole_call(
    fabric: Fabric, vm: Callable[[str], VM], bad: str
) -> None:
    valid = only_event(fabric, submit(fabric, "user-reboot", "web-0")).id
    other = only_event(fabric, submit(fabric, "user-reboot", "jumpbox")).id
    removed = only_event(fabric, submit(fabric, "user-reboot", "web-1")).id
    fabric.cancel_event(removed)
    bad_id = {"other-scope": other, "ghost": GHOST_ID, "removed": removed}[bad]
    before = observable(fabric)
    for ids in ([valid, bad_id], [bad_id, valid], [bad_id]):
        with pytest.raises(EventNotVisible, match=bad_id):
            fabric.approve(vm("web-2"), ids)
        assert observable(fabric) == before
    assert status(fabric, valid) is EventStatus.SCHEDULED


def test_empty_approval_changes_nothing(fabric: Fabric, vm: Callable[[str], VM]) -> None:
    submit(fabric, "user-reboot", "web-0")
    before = observable(fabric)
    assert fabric.approve(vm("web-0"), []) == []
    assert observable(fabric) == before


def test_control_plane_approval(fabric: Fabric) -> None:
    event_id = only_event(fabric, submit(fabric, "platform-redeploy", "jumpbox")).id
    event = fabric.approve_event(event_id.lower(), by="operator")
    assert event.status is EventStatus.STARTED
    assert event.approved_by == "operator"


GPU = {"kind": "scale_set", "name": "gpu", "vms": 3, "gpu": True}


@pytest.fixture
def gpu_fabric(build: FabricFactory) -> Fabric:
    return build(fleet({**GPU, "fault_domains": 1}))


def test_gpu_scale_set_with_one_fault_domain_shows_each_vm_its_own_events(
    gpu_fabric: Fabric,
) -> None:
    first = only_event(gpu_fabric, submit(gpu_fabric, "platform-reboot", "gpu_0")).id
    second = only_event(gpu_fabric, submit(gpu_fabric, "live-migration", "gpu_1")).id
    view = gpu_fabric.view("gpu")
    assert [e.event_id for e in view.events] == [first, second]
    assert [e.event_id for e in view.events_for("gpu_0")] == [first]
    assert [e.event_id for e in view.events_for("gpu_1")] == [second]
    assert view.events_for("gpu_2") == ()


def test_gpu_vm_cannot_approve_another_vms_event(gpu_fabric: Fabric) -> None:
    event_id = only_event(gpu_fabric, submit(gpu_fabric, "platform-reboot", "gpu_0")).id
    before = observable(gpu_fabric)
    with pytest.raises(EventNotVisible):
        gpu_fabric.approve(gpu_fabric.topology.vm("gpu_1"), [event_id])
    assert observable(gpu_fabric) == before
    gpu_fabric.approve(gpu_fabric.topology.vm("gpu_0"), [event_id])
    assert status(gpu_fabric, event_id) is EventStatus.STARTED


@pytest.mark.parametrize("extra", [{"fault_domains": 2}, {"gpu": False, "fault_domains": 1}])
def test_other_scale_sets_share_events(build: FabricFactory, extra: dict[str, object]) -> None:
    fabric = build(fleet({**GPU, **extra}))
    event_id = only_event(fabric, submit(fabric, "platform-reboot", "gpu_0")).id
    assert [e.event_id for e in fabric.view("gpu").events_for("gpu_2")] == [event_id]
    fabric.approve(fabric.topology.vm("gpu_2"), [event_id])
    assert status(fabric, event_id) is EventStatus.STARTED
