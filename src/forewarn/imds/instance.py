"""``/metadata/instance``: the compute subset real agents read (VM name, domains, zone)."""

from __future__ import annotations

from typing import Any

from forewarn.fleet import VM

__all__ = ["INSTANCE_VERSIONS", "instance_document"]

INSTANCE_VERSIONS: tuple[str, ...] = (
    "2017-03-01", "2017-04-02", "2017-08-01", "2017-10-01", "2017-12-01", "2018-02-01",
    "2018-04-02", "2018-10-01", "2019-02-01", "2019-03-11", "2019-04-30", "2019-06-01",
    "2019-06-04", "2019-08-01", "2019-08-15", "2019-11-01", "2020-06-01", "2020-07-15",
    "2020-09-01", "2020-10-01", "2020-12-01", "2021-01-01", "2021-02-01", "2021-03-01",
    "2021-05-01", "2021-10-01", "2021-11-01", "2021-11-15", "2021-12-13", "2023-07-01",
    "2023-11-15", "2024-03-15",
)  # fmt: skip

SUBSCRIPTION = "00000000-0000-4000-8000-00000000f0e1"
RESOURCE_GROUP = "forewarn"


def instance_document(vm: VM) -> dict[str, Any]:
    """The instance metadata of ``vm`` (strings throughout, as IMDS sends them)."""
    provider = "Microsoft.Compute"
    if vm.scale_set:
        resource_id = (
            f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{RESOURCE_GROUP}/providers/"
            f"{provider}/virtualMachineScaleSets/{vm.scale_set}/virtualMachines/"
            f"{vm.name.rsplit('_', 1)[-1]}"
        )
    else:
        resource_id = (
            f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{RESOURCE_GROUP}/providers/"
            f"{provider}/virtualMachines/{vm.name}"
        )
    return {
        "compute": {
            "azEnvironment": "AzurePublicCloud",
            "location": vm.location,
            "name": vm.name,
            "osType": "Linux",
            "platformFaultDomain": str(vm.fault_domain),
            "platformUpdateDomain": str(vm.update_domain),
            "priority": "Spot" if vm.spot else "Regular",
            "provider": provider,
            "resourceGroupName": RESOURCE_GROUP,
            "resourceId": resource_id,
            "subscriptionId": SUBSCRIPTION,
            "tags": "",
            "vmId": vm.vm_id,
            "vmScaleSetName": vm.scale_set,
            "vmSize": vm.size,
            "zone": vm.zone,
        },
        "network": {
            "interface": [
                {
                    "ipv4": {
                        "ipAddress": [{"privateIpAddress": vm.address, "publicIpAddress": ""}]
                    },
                    "macAddress": "000D3A000000",
                }
            ]
        },
    }
