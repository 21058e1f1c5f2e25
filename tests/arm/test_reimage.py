"""Reimage and OS upgrade through azure-mgmt-compute: with the OS image notification on,
the VM gets a Reboot event to approve, NotBefore per notBeforeTimeout, and the operation
finishes when the platform does; without it, no event."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.arm.conftest import GROUP, ArmServer, start_arm_server

FLEET = f"""
subscription: 11111111-2222-3333-4444-555555555555
resource_group: {GROUP}
scopes:
  - kind: standalone
    name: solo
  - kind: scale_set
    name: pool
    vms: 3
"""
IMAGE_ON = {
    "properties": {
        "virtualMachineProfile": {
            "scheduledEventsProfile": {
                "osImageNotificationProfile": {"enable": True, "notBeforeTimeout": "PT7M"}
            }
        }
    }
}


@pytest.fixture
def arm(tmp_path: Path) -> ArmServer:
    return start_arm_server(tmp_path, FLEET)


def approve_on_endpoint(arm: ArmServer, vm: str, event_id: str) -> None:
    r = arm.server.imds(
        vm_address=arm.address(vm),
        method="POST",
        json={"StartRequests": [{"EventId": event_id}]},
    )
    assert r.status_code == 200, r.text


def test_a_reimage_gives_an_event_to_approve_when_the_notification_is_on(
    arm: ArmServer,
) -> None:
    try:
        compute = arm.compute()
        sets, vms = compute.virtual_machine_scale_sets, compute.virtual_machine_scale_set_vms
        silent = sets.begin_reimage_all(GROUP, "pool", {"instanceIds": ["2"]})
        assert arm.events("pool_2") == []  # off by default: no notice
        arm.advance(5 * 60)
        silent.result(timeout=30)

        sets.begin_update(GROUP, "pool", IMAGE_ON).result(timeout=30)
        poller = vms.begin_reimage(GROUP, "pool", "0")
        [event] = arm.document("pool_0")["Events"]
        assert (event["EventType"], event["EventStatus"], event["EventSource"]) == (
            "Reboot", "Scheduled", "User"
        )  # fmt: skip
        assert "reimaged" in event["Description"]
        [raw] = arm.events("pool_0")
        assert raw["not_before"] - raw["created_at"] == pytest.approx(7 * 60)
        approve_on_endpoint(arm, "pool_0", event["EventId"])
        assert arm.document("pool_0")["Events"][0]["EventStatus"] == "Started"
        arm.advance(5 * 60)
        poller.result(timeout=30)
        created = [h for h in arm.history() if h["kind"] == "operation.created"]
        assert created[-1]["detail"]["kind"] == "reimage"
        assert created[-1]["detail"]["via"] == "arm"
    finally:
        arm.server.stop()


def test_an_os_upgrade_reimages_every_instance_with_notice(arm: ArmServer) -> None:
    try:
        compute = arm.compute()
        compute.virtual_machine_scale_sets.begin_update(GROUP, "pool", IMAGE_ON).result(timeout=30)
        upgrades = compute.virtual_machine_scale_set_rolling_upgrades
        poller = upgrades.begin_start_os_upgrade(GROUP, "pool")
        events = arm.events()
        assert sorted(r for e in events for r in e["resources"]) == ["pool_0", "pool_1", "pool_2"]
        assert {e["type"] for e in events} == {"Reboot"}
        arm.advance(7 * 60 + 5 * 60)  # NotBefore passes: started, then over
        poller.result(timeout=30)
    finally:
        arm.server.stop()
