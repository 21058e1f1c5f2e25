"""The fleet: scopes (fabric-controller tenants) and the VMs in them.

A scope is who sees whose events: a standalone VM, an availability set, one placement
group of a scale set, or a cloud service. Topology is immutable once built; what changes
over time (deleted VMs, incarnations) lives in the engine's state.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

import msgspec

from forewarn.contract import EventType
from forewarn.fleet.azure import DEFAULT_RESOURCE_GROUP, DEFAULT_SUBSCRIPTION, AzureNames
from forewarn.fleet.errors import FleetError, UnknownName

__all__ = ["VM", "Scope", "ScopeKind", "ScopePolicy", "Topology"]

_VM_ID_NAMESPACE = uuid.UUID("6f1c2a8e-4b1d-4c2e-9a53-0e6b5d7f3a10")


class ScopeKind(StrEnum):
    """The four kinds of scope a VM can live in."""

    STANDALONE = "standalone"
    AVAILABILITY_SET = "availability_set"
    SCALE_SET = "scale_set"
    CLOUD_SERVICE = "cloud_service"


@dataclass(frozen=True, slots=True)
class ScopePolicy:
    """Per-scope platform features (all off by default, as on a plain VM)."""

    auto_approve_user_reboot: bool = False
    auto_approve_user_redeploy: bool = False
    terminate_notification: bool = False
    terminate_timeout_minutes: int = 5
    per_vm_visibility: bool = False
    preview_user_operation_limit: bool = False
    #: ``allInstancesDown``: an event that takes every VM of the scope down is approved
    #: when it is made (nobody is left to approve it).
    auto_approve_all_instances_down: bool = False
    #: ``osImageNotificationProfile``: a reimage or OS upgrade gives a Reboot event to
    #: approve, this many minutes ahead (off: it comes without notice).
    os_image_notification: bool = False
    os_image_timeout_minutes: int = 15
    #: ``eventGridAndResourceGraph``: kept for the publishing targets (issue 18).
    event_grid_and_resource_graph: bool = False
    scheduled_events_api_version: str | None = None

    def auto_approves(self, event_type: EventType) -> bool:
        """Whether a user-initiated event of this type is created already Started (L9)."""
        if event_type is EventType.REBOOT:
            return self.auto_approve_user_reboot
        if event_type is EventType.REDEPLOY:
            return self.auto_approve_user_redeploy
        return False

    def __post_init__(self) -> None:
        if not 5 <= self.terminate_timeout_minutes <= 15:
            raise FleetError(
                "terminate notification timeout must be 5 to 15 minutes, "
                f"got {self.terminate_timeout_minutes}"
            )
        if not 1 <= self.os_image_timeout_minutes <= 15:
            raise FleetError(
                "OS image notification timeout must be 1 to 15 minutes, "
                f"got {self.os_image_timeout_minutes}"
            )


class VM(msgspec.Struct, frozen=True, gc=False):
    """One simulated VM (or role instance) and where it runs.

    A msgspec Struct rather than a dataclass: a frozen dataclass costs ~35 times more to
    build, and a 100,000-VM fleet builds one per VM on every start. ``gc=False``: VMs
    hold only strings and numbers, so the collector need not walk them.
    """

    name: str
    scope_id: str
    host: str
    address: str
    update_domain: int = 0
    fault_domain: int = 0
    zone: str = ""
    port: int | None = None
    spot: bool = False
    scale_set: str = ""
    location: str = "westeurope"
    size: str = "Standard_D2s_v5"

    @property
    def vm_id(self) -> str:
        """A stable GUID, derived from the name so it survives restarts."""
        return str(uuid.uuid5(_VM_ID_NAMESPACE, self.name))


@dataclass(frozen=True, slots=True)
class Scope:
    """A fabric-controller tenant: every VM in it sees every event of it."""

    id: str
    kind: ScopeKind
    vm_names: tuple[str, ...]
    policy: ScopePolicy = field(default_factory=ScopePolicy)
    update_domains: int = 1
    fault_domains: int = 1

    @property
    def role_instances(self) -> bool:
        """Cloud-service names never get the 2017-03-01 underscore."""
        return self.kind is ScopeKind.CLOUD_SERVICE


class Topology:
    """Scopes and VMs with the look-ups the endpoint and the engine need."""

    def __init__(
        self,
        scopes: Iterable[Scope],
        vms: Iterable[VM],
        default_vm: str | None,
        *,
        subscription: str | None = None,
        resource_group: str | None = None,
        tags: Mapping[str, tuple[tuple[str, str], ...]] | None = None,
    ) -> None:
        """``subscription``, ``resource_group`` and ``tags`` (per scope id) are the fleet's
        Azure names (``azure``), the same on every surface."""
        self.scopes: dict[str, Scope] = {}
        for scope in scopes:
            if scope.id in self.scopes:
                raise FleetError(f"scope {scope.id!r} is defined twice")
            self.scopes[scope.id] = scope
        fleet = list(vms)
        # Each index in one comprehension (a 100,000-VM fleet is indexed on every start);
        # a size that falls short means a duplicate, found again in order for the message.
        self.vms: dict[str, VM] = {vm.name: vm for vm in fleet}
        self._by_lower_name: dict[str, VM] = {
            (name if (low := name.lower()) == name else low): vm  # no copy of a lower name
            for vm in fleet
            for name in [vm.name]
        }
        if len(self._by_lower_name) != len(fleet):
            vm, _ = _first_duplicate(fleet, lambda vm: vm.name.lower())
            raise FleetError(f"VM name {vm.name!r} is used twice (names are case-insensitive)")
        unknown = {vm.scope_id for vm in fleet}.difference(self.scopes)
        if unknown:
            vm = next(vm for vm in fleet if vm.scope_id in unknown)
            raise FleetError(f"VM {vm.name!r} names unknown scope {vm.scope_id!r}")
        self._by_address: dict[str, VM] = {vm.address: vm for vm in fleet}
        if len(self._by_address) != len(fleet):
            vm, other = _first_duplicate(fleet, lambda vm: vm.address)
            raise FleetError(f"VMs {other.name!r} and {vm.name!r} share address {vm.address}")
        with_port = [vm for vm in fleet if vm.port is not None]
        self._by_port: dict[int, VM] = {vm.port: vm for vm in with_port if vm.port is not None}
        if len(self._by_port) != len(with_port):
            vm, other = _first_duplicate(with_port, lambda vm: vm.port)
            raise FleetError(f"VMs {other.name!r} and {vm.name!r} share port {vm.port}")
        self._hosts: dict[str, list[VM]] = {}
        hosts = self._hosts
        for vm in fleet:
            on_host = hosts.get(vm.host)
            if on_host is None:
                hosts[vm.host] = [vm]
            else:
                on_host.append(vm)
        for scope in self.scopes.values():
            missing = [n for n in scope.vm_names if n not in self.vms]
            if missing:
                raise FleetError(f"scope {scope.id!r} lists unknown VMs {missing}")
        if default_vm is not None and default_vm not in self.vms:
            raise FleetError(f"default VM {default_vm!r} is not in the fleet")
        self.default_vm = default_vm
        self.azure = AzureNames(
            self,
            subscription or DEFAULT_SUBSCRIPTION,
            resource_group or DEFAULT_RESOURCE_GROUP,
            dict(tags or {}),
        )

    def vm(self, name: str) -> VM:
        """The VM called ``name`` (exact match first, then ignoring case)."""
        found = self.vms.get(name) or self._by_lower_name.get(name.lower())
        if found is None:
            raise UnknownName(f"no VM named {name!r}")
        return found

    def scope(self, scope_id: str) -> Scope:
        """The scope called ``scope_id``."""
        try:
            return self.scopes[scope_id]
        except KeyError:
            raise UnknownName(f"no scope named {scope_id!r}") from None

    def scope_of(self, vm_name: str) -> Scope:
        """The scope a VM belongs to."""
        return self.scopes[self.vm(vm_name).scope_id]

    def hosts(self) -> dict[str, list[VM]]:
        """Host name → the VMs on it, in fleet order."""
        return {host: list(vms) for host, vms in self._hosts.items()}

    def vms_on_host(self, host: str) -> list[VM]:
        """The VMs on ``host``."""
        vms = self._hosts.get(host)
        if not vms:
            raise UnknownName(f"no host named {host!r}")
        return vms

    def classify(self, name: str) -> tuple[str, str]:
        """What ``name`` is: ``("vm", name)``, ``("host", name)`` or ``("scope", name)``.

        VMs are looked up first, then hosts, then scopes.
        """
        try:
            return ("vm", self.vm(name).name)
        except UnknownName:
            pass
        if name in self._hosts:
            return ("host", name)
        if name in self.scopes:
            return ("scope", name)
        raise UnknownName(f"{name!r} is neither a VM, a host nor a scope of this fleet")

    def address_map(self) -> Mapping[str, VM]:
        """Source address → VM (read-only view, for look-ups on a hot path)."""
        return MappingProxyType(self._by_address)

    def port_map(self) -> Mapping[int, VM]:
        """Dedicated port → VM (read-only view)."""
        return MappingProxyType(self._by_port)


def _first_duplicate(fleet: list[VM], key: Callable[[VM], object]) -> tuple[VM, VM]:
    """The first VM whose key an earlier VM already has, and that earlier VM."""
    seen: dict[object, VM] = {}
    for vm in fleet:
        other = seen.setdefault(key(vm), vm)
        if other is not vm:
            return vm, other
    raise AssertionError("no duplicate")  # only called when the sizes differ
