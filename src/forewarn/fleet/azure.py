"""The fleet's Azure names: one subscription, resource group and resource id per VM, so
that every surface (the metadata endpoint's ``/metadata/instance``, ARM, Event Grid,
Resource Graph, managed-identity tokens) names a VM the same way.

A standalone or availability-set VM is ``virtualMachines/{name}``; a scale set's VM is the
instance ``virtualMachineScaleSets/{set}/virtualMachines/{n}``, ``n`` its place in the set
(every placement group counted, in fleet order), as Azure numbers uniform instances. Its
computer name is the set's name and ``n`` in six base-36 digits (instance 13 of ``vmss``
is ``vmss00000d``), the host name AKS takes its node names from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from forewarn.fleet.errors import UnknownName

__all__ = [
    "DEFAULT_RESOURCE_GROUP",
    "DEFAULT_SUBSCRIPTION",
    "PROVIDER",
    "TENANT",
    "AzureNames",
    "VmIdentity",
    "computer_name",
]

DEFAULT_SUBSCRIPTION = "00000000-0000-4000-8000-00000000f0e1"
DEFAULT_RESOURCE_GROUP = "forewarn"
#: The one Entra tenant behind the fleet: tokens' ``tid``, ``/tenants``, Resource Graph rows.
TENANT = "72f988bf-0000-4000-8000-00000000f0e1"
PROVIDER = "Microsoft.Compute"
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def computer_name(scale_set: str, instance: int) -> str:
    """A uniform scale set instance's host name: the set's name, then six base-36 digits."""
    digits = ""
    while instance:
        instance, rest = divmod(instance, 36)
        digits = _BASE36[rest] + digits
    return f"{scale_set}{digits.rjust(6, '0')}"


class _VM(Protocol):
    """What naming a VM needs of it (``topology.VM``; no import: the topology holds us)."""

    @property
    def name(self) -> str: ...
    @property
    def scope_id(self) -> str: ...
    @property
    def scale_set(self) -> str: ...


class _Scope(Protocol):
    @property
    def vm_names(self) -> Sequence[str]: ...


class _Fleet(Protocol):
    """What naming needs of the fleet (``topology.Topology``)."""

    @property
    def scopes(self) -> Mapping[str, _Scope]: ...
    @property
    def vms(self) -> Mapping[str, _VM]: ...
    def vm(self, name: str) -> _VM: ...


@dataclass(frozen=True, slots=True)
class VmIdentity:
    """What Azure calls one VM: where it lives in ARM and what its OS calls itself."""

    subscription: str
    resource_group: str
    resource_id: str
    computer_name: str
    #: A scale set's instance id ("" for a VM that is no instance).
    instance_id: str = ""
    tags: tuple[tuple[str, str], ...] = ()


@dataclass
class AzureNames:
    """The fleet's subscription, resource group and tags, and the ids built from them.

    ``tags``: scope id → that scope's tags (the fleet's merged under each scope's own).
    The per-VM index is built on first use (a 100,000-VM fleet starts without it).
    """

    topology: _Fleet
    subscription: str = DEFAULT_SUBSCRIPTION
    resource_group: str = DEFAULT_RESOURCE_GROUP
    tags: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    _instances: dict[str, tuple[str, int]] | None = field(default=None, repr=False)
    _by_instance: dict[tuple[str, str], str] | None = field(default=None, repr=False)

    @property
    def group_id(self) -> str:
        return f"/subscriptions/{self.subscription}/resourceGroups/{self.resource_group}"

    def resource_id(self, kind: str, name: str) -> str:
        """The id of a compute resource of the group (``kind``: e.g. ``virtualMachines``)."""
        return f"{self.group_id}/providers/{PROVIDER}/{kind}/{name}"

    def _index(self) -> dict[str, tuple[str, int]]:
        if self._instances is None:
            instances: dict[str, tuple[str, int]] = {}
            counts: dict[str, int] = {}
            for scope in self.topology.scopes.values():
                for name in scope.vm_names:
                    sset = self.topology.vms[name].scale_set
                    if sset:
                        n = counts.get(sset, 0)
                        counts[sset] = n + 1
                        instances[name] = (sset, n)
            self._instances = instances
            self._by_instance = {(s.lower(), str(n)): vm for vm, (s, n) in instances.items()}
        return self._instances

    def instance_of(self, vm_name: str) -> tuple[str, int] | None:
        """A scale set's VM: its set and instance number; None for any other VM."""
        return self._index().get(vm_name)

    def instance_vm(self, scale_set: str, instance_id: str) -> str:
        """The VM name of a scale set's instance (UnknownName when there is none)."""
        self._index()
        assert self._by_instance is not None
        found = self._by_instance.get((scale_set.lower(), instance_id))
        if found is None:
            raise UnknownName(f"no instance {instance_id!r} in scale set {scale_set!r}")
        return found

    def vm_id(self, vm_name: str) -> str:
        """The ARM id of any VM of the fleet (an instance id for a scale set's VM)."""
        owner = self.instance_of(vm_name)
        if owner is None:
            return self.resource_id("virtualMachines", vm_name)
        return self.resource_id("virtualMachineScaleSets", owner[0]) + (
            f"/virtualMachines/{owner[1]}"
        )

    def computer_name(self, vm_name: str) -> str:
        """What the VM's OS calls itself: its name, or a scale set instance's host name
        (alone: a listing of a million VMs need not make every ARM id too)."""
        owner = self.instance_of(vm_name)
        return vm_name if owner is None else computer_name(*owner)

    def identity(self, vm: _VM) -> VmIdentity:
        """Everything Azure calls ``vm``."""
        owner = self.instance_of(vm.name)
        return VmIdentity(
            subscription=self.subscription,
            resource_group=self.resource_group,
            resource_id=self.vm_id(vm.name),
            computer_name=self.computer_name(vm.name),
            instance_id="" if owner is None else str(owner[1]),
            tags=self.tags.get(vm.scope_id, ()),
        )

    def vm_of_resource_id(self, resource_id: str) -> str | None:
        """The VM an ARM id names (any case), or None."""
        low = resource_id.lower().rstrip("/")
        prefix = f"{self.group_id}/providers/{PROVIDER}/".lower()
        if not low.startswith(prefix):
            return None
        parts = resource_id.rstrip("/")[len(prefix) :].split("/")
        kinds = [p.lower() for p in parts[::2]]
        try:
            if kinds == ["virtualmachines"] and len(parts) == 2:
                name = self.topology.vm(parts[1]).name
                return None if self.instance_of(name) is not None else name
            if kinds == ["virtualmachinescalesets", "virtualmachines"] and len(parts) == 4:
                return self.instance_vm(parts[1], parts[3])
        except UnknownName:
            return None
        return None
