"""The ARM ids of the fleet's scheduled events, as Event Grid and Resource Graph name them.

An event's id hangs under the resource that owns its scope: the VM of a standalone scope,
the availability set, the scale set (not its instances); a cloud service has no ARM
resource, so its events are published nowhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from forewarn.fleet.topology import ScopeKind, Topology

__all__ = ["EVENT_TYPE", "ArmNames"]

EVENT_TYPE = "microsoft.maintenance/scheduledevents"


@dataclass(frozen=True, slots=True)
class ArmNames:
    """The ids of the fleet's published events, over its Azure names (``Topology.azure``:
    the same subscription, group and resource ids ARM and the metadata endpoint give)."""

    topology: Topology

    @property
    def subscription(self) -> str:
        return self.topology.azure.subscription

    @property
    def resource_group(self) -> str:
        return self.topology.azure.resource_group

    @property
    def topic(self) -> str:
        return f"/subscriptions/{self.subscription}"

    def owner(self, scope_id: str) -> str | None:
        """The ARM id of the resource owning a scope, or None (a cloud service)."""
        scope = self.topology.scopes.get(scope_id)
        if scope is None or not scope.vm_names:
            return None
        names = self.topology.azure
        if scope.kind is ScopeKind.STANDALONE:
            return names.resource_id("virtualMachines", scope.vm_names[0])
        if scope.kind is ScopeKind.AVAILABILITY_SET:
            return names.resource_id("availabilitySets", scope.id)
        if scope.kind is ScopeKind.SCALE_SET:
            vm = self.topology.vms[scope.vm_names[0]]
            return names.resource_id("virtualMachineScaleSets", vm.scale_set)
        return None

    def event_id(self, owner: str, event_id: str) -> str:
        return f"{owner}/providers/Microsoft.Maintenance/scheduledevents/{event_id}"

    def location(self, scope_id: str) -> str:
        scope = self.topology.scopes[scope_id]
        return self.topology.vms[scope.vm_names[0]].location
