"""The fleet's resources as ARM's JSON (the parts a Scheduled Events user reads)."""

from __future__ import annotations

from typing import Any

from forewarn.arm.policies import Extras, extras_of, render_policy, render_profile
from forewarn.arm.resources import ArmFleet, ScaleSet
from forewarn.fabric import Fabric

__all__ = ["Renderer"]


class Renderer:
    """VM, scale-set and availability-set documents, with their current policies."""

    def __init__(self, fabric: Fabric, fleet: ArmFleet, extras: dict[str, Extras]) -> None:
        self.fabric = fabric
        self.fleet = fleet
        self.extras = extras

    def _settings(self, scope_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        policy = self.fabric.topology.scope(scope_id).policy
        extras = extras_of(self.extras, scope_id, policy)
        return render_policy(policy, extras), render_profile(policy, extras)

    def vm(self, name: str) -> dict[str, Any]:
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
        out: dict[str, Any] = {
            "id": self.fleet.vm_id(vm.name),
            "name": vm.name,
            "type": "Microsoft.Compute/virtualMachines",
            "location": vm.location,
            "properties": props,
        }
        if vm.zone:
            out["zones"] = [vm.zone]
        return out

    def scale_set(self, sset: ScaleSet) -> dict[str, Any]:
        policy, profile = self._settings(sset.scope_ids[0])
        live = [n for n in sset.instances.values() if not self.fabric.is_deleted(n)]
        return {
            "id": self.fleet.resource_id("virtualMachineScaleSets", sset.name),
            "name": sset.name,
            "type": "Microsoft.Compute/virtualMachineScaleSets",
            "location": self.fleet.location,
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
            "properties": {
                "platformUpdateDomainCount": scope.update_domains,
                "platformFaultDomainCount": scope.fault_domains,
                "virtualMachines": [{"id": self.fleet.vm_id(n)} for n in members],
                "scheduledEventsPolicy": policy,
            },
        }
