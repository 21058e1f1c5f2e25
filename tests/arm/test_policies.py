"""scheduledEventsPolicy and scheduledEventsProfile set through azure-mgmt-compute change
the next event; a malformed one is refused as ARM refuses it, and changes nothing."""

from __future__ import annotations

import pytest
from azure.core.exceptions import HttpResponseError

from tests.arm.conftest import GROUP, ArmServer

AUTO_REBOOT = {
    "properties": {"scheduledEventsPolicy": {"userInitiatedReboot": {"automaticallyApprove": True}}}
}


def test_an_auto_approved_reboot_is_created_started(arm: ArmServer) -> None:
    compute = arm.compute()
    vm = compute.virtual_machines.begin_update(GROUP, "solo", AUTO_REBOOT).result(timeout=30)
    assert vm.properties is not None and vm.properties.scheduled_events_policy is not None
    policy = vm.properties.scheduled_events_policy
    assert policy.user_initiated_reboot is not None
    assert policy.user_initiated_reboot.automatically_approve is True
    got = compute.virtual_machines.get(GROUP, "solo").as_dict()
    assert got["properties"]["scheduledEventsPolicy"]["userInitiatedReboot"] == {
        "automaticallyApprove": True
    }
    poller = compute.virtual_machines.begin_restart(GROUP, "solo")
    [event] = arm.document("solo")["Events"]
    assert (event["EventType"], event["EventStatus"]) == ("Reboot", "Started")
    arm.advance(2 * 60)
    poller.result(timeout=30)
    arm.advance(10 * 60)
    changed = [h for h in arm.history() if h["kind"] == "scope.policy" and h["scope_id"] == "solo"]
    assert changed[-1]["detail"]["via"] == "arm"
    assert changed[-1]["detail"]["auto_approve_user_reboot"] is True


def test_an_availability_set_policy_applies_to_its_vms(arm: ArmServer) -> None:
    compute = arm.compute()
    avset = compute.availability_sets.update(
        GROUP,
        "web",
        {"properties": {"scheduledEventsPolicy": {
            "userInitiatedRedeploy": {"automaticallyApprove": True}}}},
    )  # fmt: skip
    assert avset.as_dict()["properties"]["scheduledEventsPolicy"]["userInitiatedRedeploy"] == {
        "automaticallyApprove": True
    }
    poller = compute.virtual_machines.begin_redeploy(GROUP, "web-1")
    [event] = arm.events("web-1")
    assert (event["type"], event["status"]) == ("Redeploy", "Started")
    arm.advance(5 * 60)
    poller.result(timeout=30)
    arm.advance(10 * 60)


def test_terminate_notice_follows_not_before_timeout_and_none_when_disabled(
    arm: ArmServer,
) -> None:
    compute = arm.compute()
    profile = {"terminateNotificationProfile": {"enable": True, "notBeforeTimeout": "PT10M"}}
    body = {"properties": {"virtualMachineProfile": {"scheduledEventsProfile": profile}}}
    vmss = compute.virtual_machine_scale_sets.begin_update(GROUP, "pool", body).result(timeout=30)
    shown = vmss.as_dict()["properties"]["virtualMachineProfile"]["scheduledEventsProfile"]
    assert shown["terminateNotificationProfile"] == {"enable": True, "notBeforeTimeout": "PT10M"}
    poller = compute.virtual_machine_scale_sets.begin_delete_instances(
        GROUP, "pool", {"instanceIds": ["0"]}
    )
    [event] = arm.events("pool_0")
    assert event["type"] == "Terminate"
    assert event["not_before"] - event["created_at"] == pytest.approx(600)
    arm.advance(600 + 60)
    poller.result(timeout=30)

    off = {"terminateNotificationProfile": {"enable": False}}
    body = {"properties": {"virtualMachineProfile": {"scheduledEventsProfile": off}}}
    compute.virtual_machine_scale_sets.begin_update(GROUP, "pool", body).result(timeout=30)
    poller = compute.virtual_machine_scale_sets.begin_delete_instances(
        GROUP, "pool", {"instanceIds": ["3"]}
    )
    assert arm.events("pool_3") == []  # no notice: no event
    arm.advance(60)
    poller.result(timeout=30)
    assert compute.virtual_machine_scale_sets.get(GROUP, "pool").sku.capacity == 2


@pytest.mark.parametrize(
    "body",
    [
        {"properties": {"scheduledEventsPolicy": {"userInitiatedReboot": {
            "automaticallyApprove": "yes"}}}},
        {"properties": {"scheduledEventsPolicy": {"userInitiatedReboot": True}}},
        {"properties": {"scheduledEventsPolicy": {"userInitiatedReeboot": {}}}},
        {"properties": {"scheduledEventsProfile": {"terminateNotificationProfile": {
            "enable": True, "notBeforeTimeout": "PT20M"}}}},
        {"properties": {"scheduledEventsProfile": {"terminateNotificationProfile": {
            "enable": True, "notBeforeTimeout": "10 minutes"}}}},
        {"properties": {"scheduledEventsProfile": {"terminateNotificationProfile": {
            "enable": True, "notBeforeTimeout": "PT5M30S"}}}},
        {"properties": []},
    ],
)  # fmt: skip
def test_a_malformed_policy_is_a_400_and_changes_nothing(
    arm: ArmServer, body: dict[str, object]
) -> None:
    compute = arm.compute()
    before = compute.virtual_machines.get(GROUP, "solo2").as_dict()
    with pytest.raises(HttpResponseError) as refused:
        compute.virtual_machines.begin_update(GROUP, "solo2", body).result(timeout=30)
    assert refused.value.status_code == 400
    assert refused.value.error is not None and refused.value.error.code == "InvalidParameter"
    assert compute.virtual_machines.get(GROUP, "solo2").as_dict() == before
