"""The fleet's resources as ARM's JSON (the parts a Scheduled Events user reads), and
their instance views, whose power state follows the platform (``vm_status``)."""

from __future__ import annotations

import datetime
from typing import Any

from forewarn.arm.policies import render_policy, render_profile
from forewarn.arm.resources import ArmFleet, ScaleSet
from forewarn.fabric import Fabric, pending_maintenance
from forewarn.fleet import VM

__all__ = ["Renderer"]

#: The platform's word for what a VM is going through → ARM's power state.
_POWER = {
    "running": ("running", "VM running"),
    "frozen": ("running", "VM running"),
    "rebooting": ("starting", "VM starting"),
    "redeploying": ("starting", "VM starting"),
    "evicting": ("deallocating", "VM deallocating"),
    "terminating": ("stopping", "VM stopping"),
    "deleted": ("deallocated", "VM deallocated"),
}


def _iso(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, datetime.UTC).isoformat().replace("+00:00", "Z")


class Renderer:
    """VM, scale-set and availability-set documents, with their current policies."""

    def __init__(self, fabric: Fabric, fleet: ArmFleet) -> None:
        self.fabric = fabric
        self.fleet = fleet

    def _settings(self, scope_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        policy = self.fabric.policy(scope_id)
        return render_policy(policy), render_profile(policy)

    def vm(self, name: str, *, expand: bool = False) -> dict[str, Any]:
        vm = self.fabric.topology.vm(name)
        policy, profile = self._settings(vm.scope_id)
        props: dict[str, Any] = {
            "vmId": vm.vm_id,
            "hardwareProfile": {"vmSize": vm.size},
            "provisioningState": "Succeeded",
            "scheduledEventsPolicy": policy,
            "scheduledEventsProfile": profile,
        }
        if vm.scope_id in {s.id for s in self.fleet.availability_sets.values()}:
            props["availabilitySet"] = {
                "id": self.fleet.resource_id("availabilitySets", vm.scope_id)
            }
        identity = self.fleet.names.identity(vm)
        props["osProfile"] = {"computerName": identity.computer_name, "adminUsername": "azureuser"}
        props["storageProfile"] = {"osDisk": {"osType": "Linux", "createOption": "FromImage"}}
        out: dict[str, Any] = {
            "id": identity.resource_id,
            "name": vm.name,
            "type": "Microsoft.Compute/virtualMachines",
            "location": vm.location,
            "tags": dict(identity.tags),
            "properties": props,
        }
        if vm.zone:
            out["zones"] = [vm.zone]
        if expand:
            props["instanceView"] = self.instance_view(vm)
        return out

    def instance(self, sset: ScaleSet, instance_id: str, *, expand: bool = False) -> dict[str, Any]:
        """A scale set's instance (``virtualMachineScaleSets/{set}/virtualMachines/{n}``)."""
        vm = self.fabric.topology.vms[sset.instances[instance_id]]
        identity = self.fleet.names.identity(vm)
        _policy, _profile = self._settings(vm.scope_id)
        props: dict[str, Any] = {
            "vmId": vm.vm_id,
            "latestModelApplied": True,
            "hardwareProfile": {"vmSize": vm.size},
            "osProfile": {"computerName": identity.computer_name, "adminUsername": "azureuser"},
            "storageProfile": {"osDisk": {"osType": "Linux", "createOption": "FromImage"}},
            "provisioningState": "Succeeded",
        }
        if expand:
            props["instanceView"] = self.instance_view(vm)
        out: dict[str, Any] = {
            "id": identity.resource_id,
            "name": f"{sset.name}_{instance_id}",
            "type": "Microsoft.Compute/virtualMachineScaleSets/virtualMachines",
            "location": vm.location,
            "instanceId": instance_id,
            "tags": dict(identity.tags),
            "sku": {"name": vm.size, "tier": "Standard"},
            "properties": props,
        }
        if vm.zone:
            out["zones"] = [vm.zone]
        return out

    def instance_view(self, vm: VM) -> dict[str, Any]:
        """A VM's instance view: its power state as the platform has it, and the pending
        platform maintenance a user may start early (``maintenanceRedeployStatus``)."""
        status = self.fabric.vm_status(vm.name)
        code, shown = _POWER.get(status, ("running", "VM running"))
        view: dict[str, Any] = {
            "computerName": self.fleet.names.identity(vm).computer_name,
            "osName": "ubuntu",
            "osVersion": "22.04",
            "platformUpdateDomain": vm.update_domain,
            "platformFaultDomain": vm.fault_domain,
            "statuses": [
                {
                    "code": "ProvisioningState/succeeded",
                    "level": "Info",
                    "displayStatus": "Provisioning succeeded",
                },
                {"code": f"PowerState/{code}", "level": "Info", "displayStatus": shown},
            ],
        }
        pending = pending_maintenance(self.fabric.events(), vm.name)
        if pending is not None:
            now = self.fabric.clock.now()
            view["maintenanceRedeployStatus"] = {
                "isCustomerInitiatedMaintenanceAllowed": True,
                "preMaintenanceWindowStartTime": _iso(min(now, pending.created_at)),
                "preMaintenanceWindowEndTime": _iso(pending.not_before),
                "maintenanceWindowStartTime": _iso(pending.not_before),
                "maintenanceWindowEndTime": _iso(pending.not_before + 35 * 24 * 3600),
                "lastOperationResultCode": "None",
            }
        return view

    def status_only(self, vm: VM) -> dict[str, Any]:
        """``$expand=instanceView&statusOnly=true``: the instance view alone, as a VM."""
        return {"name": vm.name, "properties": {"instanceView": self.instance_view(vm)}}

    def scale_set(self, sset: ScaleSet) -> dict[str, Any]:
        policy, profile = self._settings(sset.scope_ids[0])
        live = [n for n in sset.instances.values() if not self.fabric.is_deleted(n)]
        return {
            "id": self.fleet.resource_id("virtualMachineScaleSets", sset.name),
            "name": sset.name,
            "type": "Microsoft.Compute/virtualMachineScaleSets",
            "location": self.fleet.location,
            "tags": dict(self.fleet.names.tags.get(sset.scope_ids[0], ())),
            "sku": {"name": self.fabric.topology.vms[live[0]].size, "capacity": len(live)},
            "properties": {
                "provisioningState": "Succeeded",
                "singlePlacementGroup": len(sset.scope_ids) == 1,
                "scheduledEventsPolicy": policy,
                "virtualMachineProfile": {"scheduledEventsProfile": profile},
            },
        }

    def availability_set(self, scope_id: str) -> dict[str, Any]:
        scope = self.fabric.topology.scope(scope_id)
        policy, _ = self._settings(scope_id)
        members = [n for n in scope.vm_names if not self.fabric.is_deleted(n)]
        return {
            "id": self.fleet.resource_id("availabilitySets", scope.id),
            "name": scope.id,
            "type": "Microsoft.Compute/availabilitySets",
            "location": self.fleet.location,
            "tags": dict(self.fleet.names.tags.get(scope.id, ())),
            "properties": {
                "platformUpdateDomainCount": scope.update_domains,
                "platformFaultDomainCount": scope.fault_domains,
                "virtualMachines": [{"id": self.fleet.vm_id(n)} for n in members],
                "scheduledEventsPolicy": policy,
            },
        }
