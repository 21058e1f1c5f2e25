"""The read side the CLI uses, through the unmodified azure-mgmt-compute client too: lists
per group and subscription (the SDK follows nextLink itself), a scale set's instances,
instance views and ``$expand``, each naming the VM as its metadata endpoint does."""

from __future__ import annotations

from tests.arm.conftest import GROUP, SUBSCRIPTION, ArmServer


def test_lists_as_the_sdk_pages_them(arm: ArmServer) -> None:
    compute = arm.compute()
    in_group = sorted(vm.name for vm in compute.virtual_machines.list(GROUP))
    assert in_group == sorted(vm.name for vm in compute.virtual_machines.list_all())
    assert {"solo", "solo2", "solo3", "web-0", "web-1", "web-2"} <= set(in_group)
    sets = sorted(s.name for s in compute.virtual_machine_scale_sets.list(GROUP))
    assert sets == sorted(s.name for s in compute.virtual_machine_scale_sets.list_all())
    assert {"pool", "quiet", "spots"} <= set(sets)
    assert [a.name for a in compute.availability_sets.list(GROUP)] == ["web"]
    instances = list(compute.virtual_machine_scale_set_vms.list(GROUP, "pool"))
    assert [i.instance_id for i in instances] == ["0", "1", "2", "3"]
    assert instances[3].os_profile.computer_name == "pool000003"


def test_instance_views_follow_the_platform_and_name_the_vm_alike(arm: ArmServer) -> None:
    compute = arm.compute()
    view = compute.virtual_machines.instance_view(GROUP, "solo3")
    assert [s.code for s in view.statuses] == ["ProvisioningState/succeeded", "PowerState/running"]
    expanded = compute.virtual_machines.get(GROUP, "solo3", expand="instanceView")
    assert expanded.instance_view.computer_name == "solo3"
    instance = compute.virtual_machine_scale_set_vms.get_instance_view(GROUP, "quiet", "1")
    assert "PowerState/running" in [s.code for s in instance.statuses]
    compute.virtual_machines.begin_restart(GROUP, "solo3")
    [event] = arm.events("solo3")
    approved = arm.server.control("POST", f"/api/v1/events/{event['id']}/approve", json={})
    assert approved.status_code == 200, approved.text
    view = compute.virtual_machines.instance_view(GROUP, "solo3")
    assert "PowerState/starting" in [s.code for s in view.statuses]
    arm.advance(30 * 60)
    view = compute.virtual_machines.instance_view(GROUP, "solo3")
    assert "PowerState/running" in [s.code for s in view.statuses]
    compute_id = expanded.id
    metadata = arm.server.imds(
        vm_address=arm.address("solo3"), path="/metadata/instance", api_version="2021-02-01"
    ).json()["compute"]
    assert metadata["resourceId"] == compute_id
    assert metadata["subscriptionId"] == SUBSCRIPTION
