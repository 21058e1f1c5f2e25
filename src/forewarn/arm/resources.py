"""The fleet as ARM sees it: VMs, scale sets (with their instances) and availability sets
under one subscription and resource group, and their ids.

A standalone VM or an availability set's VM is ``virtualMachines/{name}``; a scale set's VM
is an instance ``virtualMachineScaleSets/{set}/virtualMachines/{instanceId}`` (its index in
the set, as Azure numbers uniform instances); a cloud service has no ARM compute resource.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from forewarn.arm.errors import ArmError
from forewarn.arm.paths import shown_name
from forewarn.fleet.azure import PROVIDER
from forewarn.fleet.topology import VM, Scope, ScopeKind, Topology

__all__ = ["ArmFleet", "ScaleSet"]


@dataclass
class ScaleSet:
    """A scale set: its scopes (placement groups) and its instances by instance id."""

    name: str
    scope_ids: list[str] = field(default_factory=list)
    instances: dict[str, str] = field(default_factory=dict)


class ArmFleet:
    """Look-ups from ARM names to the fleet (case-insensitive, as ARM is), under the
    fleet's own Azure names (``Topology.azure``: the metadata endpoint's too)."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.names = topology.azure
        self.location = next(iter(topology.vms.values())).location if topology.vms else ""
        self.vms: dict[str, VM] = {}
        self.availability_sets: dict[str, Scope] = {}
        self.scale_sets: dict[str, ScaleSet] = {}
        for scope in topology.scopes.values():
            if scope.kind is ScopeKind.AVAILABILITY_SET:
                self.availability_sets[scope.id.lower()] = scope
            if scope.kind in (ScopeKind.STANDALONE, ScopeKind.AVAILABILITY_SET):
                for name in scope.vm_names:
                    self.vms[name.lower()] = topology.vms[name]
            if scope.kind is ScopeKind.SCALE_SET:
                for name in scope.vm_names:
                    vm = topology.vms[name]
                    sset = self.scale_sets.setdefault(vm.scale_set.lower(), ScaleSet(vm.scale_set))
                    if scope.id not in sset.scope_ids:
                        sset.scope_ids.append(scope.id)
                    owner = self.names.instance_of(name)
                    assert owner is not None
                    sset.instances[str(owner[1])] = name
        for sset in self.scale_sets.values():
            sset.instances = dict(sorted(sset.instances.items(), key=lambda kv: int(kv[0])))

    @property
    def subscription(self) -> str:
        return self.names.subscription

    @property
    def resource_group(self) -> str:
        return self.names.resource_group

    # ------------------------------------------------------------------ look-ups

    def check_subscription(self, subscription: str) -> None:
        """A request's subscription must be the fleet's."""
        if subscription.lower() != self.subscription.lower():
            raise ArmError(
                404,
                "SubscriptionNotFound",
                f"The subscription '{shown_name(subscription)}' could not be found.",
            )

    def check_group(self, subscription: str, resource_group: str) -> None:
        """A request's subscription and resource group must be the fleet's."""
        self.check_subscription(subscription)
        if resource_group.lower() != self.resource_group.lower():
            raise ArmError(
                404,
                "ResourceGroupNotFound",
                f"Resource group '{shown_name(resource_group)}' could not be found.",
            )

    def vm(self, name: str) -> VM:
        """A standalone or availability-set VM by name."""
        found = self.vms.get(name.lower())
        if found is None:
            raise self.not_found("virtualMachines", name)
        return found

    def scale_set(self, name: str) -> ScaleSet:
        found = self.scale_sets.get(name.lower())
        if found is None:
            raise self.not_found("virtualMachineScaleSets", name)
        return found

    def instance(self, sset: ScaleSet, instance_id: str) -> str:
        """The VM name of a scale set's instance."""
        name = sset.instances.get(instance_id)
        if name is None:
            raise self.not_found(
                f"virtualMachineScaleSets/{sset.name}/virtualMachines", instance_id
            )
        return name

    def availability_set(self, name: str) -> Scope:
        found = self.availability_sets.get(name.lower())
        if found is None:
            raise self.not_found("availabilitySets", name)
        return found

    def not_found(self, kind: str, name: str) -> ArmError:
        """ARM's 404 for a resource of the fleet's group that is not there."""
        return ArmError(
            404,
            "ResourceNotFound",
            f"The Resource '{PROVIDER}/{kind}/{shown_name(name)}' under resource group "
            f"'{self.resource_group}' was not found. For more details please go to "
            "https://aka.ms/ARMResourceNotFoundFix",
        )

    # ----------------------------------------------------------------------- ids

    @property
    def group_id(self) -> str:
        return self.names.group_id

    def resource_id(self, kind: str, name: str) -> str:
        return self.names.resource_id(kind, name)

    def vm_id(self, vm_name: str) -> str:
        """The ARM id of any VM of the fleet (an instance id for a scale set's VM)."""
        return self.names.vm_id(vm_name)

    def operation_url(self, base: str, operation: str, api_version: str) -> str:
        return (
            f"{base}/subscriptions/{self.subscription}/providers/{PROVIDER}/locations/"
            f"{self.location}/operations/{operation}?api-version={api_version}"
        )
