"""The Maintenance provider's acknowledge, sent through azure-core's pipeline (no released
SDK has it): an approval exactly as one through the endpoint."""

from __future__ import annotations

from azure.core.rest import HttpRequest

from tests.arm.conftest import GROUP, SUBSCRIPTION, ArmServer

BASE = f"/subscriptions/{SUBSCRIPTION}/resourcegroups/{GROUP}/providers/Microsoft.Compute"


def _ack(kind: str, name: str, event_id: str, version: str = "2023-10-01-preview") -> str:
    return (
        f"{BASE}/{kind}/{name}/providers/Microsoft.Maintenance/scheduledevents/{event_id}"
        f"/acknowledge?api-version={version}"
    )


def test_acknowledge_releases_the_event_for_all_its_resources(arm: ArmServer) -> None:
    compute = arm.compute()
    poller = compute.virtual_machine_scale_sets.begin_delete_instances(
        GROUP, "pool", {"instanceIds": ["0", "1"]}
    )
    [event] = arm.events("pool_0")
    assert sorted(event["resources"]) == ["pool_0", "pool_1"]
    r = compute.send_request(
        HttpRequest("POST", _ack("virtualMachineScaleSets", "pool", event["id"], "2025-11-01"))
    )
    assert r.status_code == 200, r.text()
    assert r.json() == {"value": "Successfully Approved"}
    assert r.headers["x-ms-request-id"]
    for vm in ("pool_0", "pool_1"):  # each VM sees it Started, without waiting for NotBefore
        [seen] = arm.document(vm)["Events"]
        assert (seen["EventId"], seen["EventStatus"]) == (event["id"], "Started")
    approved = [h for h in arm.history() if h["kind"] == "event.approved"]
    assert approved[-1]["event_id"] == event["id"] and approved[-1]["detail"]["via"] == "arm"
    arm.advance(60)
    poller.result(timeout=30)


def test_the_list_form_approves_every_event_given(arm: ArmServer) -> None:
    compute = arm.compute()
    poller = compute.virtual_machines.begin_restart(GROUP, "solo")
    [event] = arm.events("solo")
    url = f"{BASE}/virtualMachines/solo/providers/Microsoft.Maintenance/scheduledevents/acknowledge"
    r = compute.send_request(
        HttpRequest("POST", url + "?api-version=2025-11-01", json={"value": [event["id"]]})
    )
    assert r.status_code == 200 and r.json() == {"value": "Successfully Approved"}
    assert arm.document("solo")["Events"][0]["EventStatus"] == "Started"
    arm.advance(2 * 60)
    poller.result(timeout=30)
    arm.advance(10 * 60)


def test_acknowledging_another_resources_event_or_an_unknown_one_changes_nothing(
    arm: ArmServer,
) -> None:
    compute = arm.compute()
    poller = compute.virtual_machines.begin_restart(GROUP, "solo2")
    [event] = arm.events("solo2")
    wrong = [
        (_ack("virtualMachines", "solo3", event["id"]), 404, "ResourceNotFound"),
        (_ack("virtualMachines", "solo2", "00000000-0000-0000-0000-000000000000"), 404,
         "ResourceNotFound"),
        (_ack("virtualMachines", "nosuchvm", event["id"]), 404, "ResourceNotFound"),
        (_ack("virtualMachines", "solo2", event["id"], "2021-01-01"), 400,
         "NoRegisteredProviderFound"),
    ]  # fmt: skip
    for url, status, code in wrong:
        r = compute.send_request(HttpRequest("POST", url))
        assert r.status_code == status, (url, r.text())
        assert r.json()["error"]["code"] == code
    url = (
        f"{BASE}/virtualMachines/solo2/providers/Microsoft.Maintenance/scheduledevents/acknowledge"
    )
    r = compute.send_request(HttpRequest(
        "POST", url + "?api-version=2025-11-01", json={"value": [event["id"], "nope"]}
    ))  # fmt: skip
    assert r.status_code == 404  # all or none
    [seen] = arm.document("solo2")["Events"]
    assert seen["EventStatus"] == "Scheduled"
    arm.advance(15 * 60 + 2 * 60)
    poller.result(timeout=30)
    arm.advance(10 * 60)
