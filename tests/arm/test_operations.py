"""ARM operations through the unmodified azure-mgmt-compute client: each becomes the
platform's operation, and ``begin_*(...).result()`` returns when the platform is done."""

from __future__ import annotations

import threading

import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError

from tests.arm.conftest import GROUP, SUBSCRIPTION, ArmServer

NOTICE = 15 * 60  # a user reboot's notice, at time scale 1


def test_restart_gives_the_vm_a_reboot_event_and_result_waits_for_the_reboot(
    arm: ArmServer,
) -> None:
    compute = arm.compute()
    poller = compute.virtual_machines.begin_restart(GROUP, "solo")
    doc = arm.document("solo")
    [event] = doc["Events"]
    assert (event["EventType"], event["EventStatus"]) == ("Reboot", "Scheduled")
    assert (event["Resources"], event["EventSource"]) == (["solo"], "User")
    finished = threading.Event()
    threading.Thread(
        target=lambda: (poller.result(timeout=60), finished.set()), daemon=True
    ).start()
    assert not finished.wait(1.0)  # NotBefore has not come: the reboot has not happened
    arm.advance(NOTICE)  # the event starts, the VM reboots (2 minutes)
    assert arm.document("solo")["Events"][0]["EventStatus"] == "Started"
    assert not finished.wait(1.0)  # rebooting
    arm.advance(2 * 60)
    assert finished.wait(30), "begin_restart().result() did not return after the reboot"
    assert poller.status() == "Succeeded"
    created = [
        h for h in arm.history()
        if h["kind"] == "operation.created" and h["detail"]["vms"] == ["solo"]
    ]  # fmt: skip
    assert created[-1]["detail"]["via"] == "arm"
    arm.advance(10 * 60)  # the event goes away


def test_redeploy_and_a_second_operation_while_one_runs(arm: ArmServer) -> None:
    compute = arm.compute()
    poller = compute.virtual_machines.begin_redeploy(GROUP, "solo2")
    [event] = arm.document("solo2")["Events"]
    assert event["EventType"] == "Redeploy"
    with pytest.raises(HttpResponseError) as refused:
        compute.virtual_machines.begin_restart(GROUP, "solo2")
    assert refused.value.status_code == 409
    assert refused.value.error is not None and refused.value.error.code == "OperationNotAllowed"
    assert len(arm.document("solo2")["Events"]) == 1  # nothing changed
    arm.advance(10 * 60 + 5 * 60)
    poller.result(timeout=30)
    assert poller.status() == "Succeeded"
    arm.advance(10 * 60)


def test_simulate_eviction_of_a_spot_instance_is_a_preempt(arm: ArmServer) -> None:
    compute = arm.compute()
    compute.virtual_machine_scale_set_vms.simulate_eviction(GROUP, "spots", "1")
    [event] = arm.events("spots_1")
    assert (event["type"], event["resources"]) == ("Preempt", ["spots_1"])
    arm.advance(60 + 60)
    with pytest.raises(ResourceNotFoundError):  # evicted: deleted
        compute.virtual_machine_scale_set_vms.simulate_eviction(GROUP, "spots", "1")


def test_simulate_eviction_of_a_regular_vm_is_refused(arm: ArmServer) -> None:
    with pytest.raises(HttpResponseError) as refused:
        arm.compute().virtual_machines.simulate_eviction(GROUP, "solo3")
    assert refused.value.status_code == 409
    assert "Spot" in str(refused.value)
    assert arm.events("solo3") == []


def test_delete_instances_is_a_terminate_when_the_notification_is_on(arm: ArmServer) -> None:
    compute = arm.compute()
    poller = compute.virtual_machine_scale_sets.begin_delete_instances(
        GROUP, "pool", {"instanceIds": ["0", "1"]}
    )
    [event] = arm.events("pool_0")
    assert (event["type"], sorted(event["resources"])) == ("Terminate", ["pool_0", "pool_1"])
    assert not poller.done()
    arm.advance(5 * 60)
    assert not poller.done()  # the instances are deleted once the event is over
    arm.advance(60)
    poller.result(timeout=30)
    vmss = compute.virtual_machine_scale_sets.get(GROUP, "pool")
    assert vmss.sku is not None and vmss.sku.capacity == 2


def test_scale_set_restart_restarts_every_instance_and_waits_for_all(arm: ArmServer) -> None:
    compute = arm.compute()
    poller = compute.virtual_machine_scale_sets.begin_restart(GROUP, "quiet")
    reboots = [e for e in arm.events() if e["scope"] == "quiet" and e["type"] == "Reboot"]
    assert sorted(r for e in reboots for r in e["resources"]) == ["quiet_0", "quiet_1"]
    arm.advance(NOTICE + 2 * 60)
    poller.result(timeout=30)
    assert poller.status() == "Succeeded"
    arm.advance(10 * 60)


def test_the_operation_status_routes_answer_as_arm_does(arm: ArmServer) -> None:
    with arm.https() as client:
        r = client.post(
            f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{GROUP}/providers/Microsoft.Compute"
            "/virtualMachines/web-2/restart?api-version=2024-07-01",
            headers={"Authorization": "Bearer x"},
        )
        assert r.status_code == 202, r.text
        assert r.headers["x-ms-request-id"]
        status = client.get(
            r.headers["Azure-AsyncOperation"], headers={"Authorization": "Bearer x"}
        )
        assert status.json()["status"] == "InProgress"
        monitor = client.get(r.headers["Location"], headers={"Authorization": "Bearer x"})
        assert monitor.status_code == 202
        arm.advance(NOTICE + 2 * 60)
        status = client.get(
            r.headers["Azure-AsyncOperation"], headers={"Authorization": "Bearer x"}
        )
        assert status.json()["status"] == "Succeeded" and status.json()["endTime"]
        monitor = client.get(r.headers["Location"], headers={"Authorization": "Bearer x"})
        assert monitor.status_code == 200
    arm.advance(10 * 60)
