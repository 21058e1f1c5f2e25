"""The fleet: scopes (fabric-controller tenants) and the VMs in them.

A scope is who sees whose events: a standalone VM, an availability set, one placement
group of a scale set, or a cloud service. Topology is immutable once built; what changes
over time (deleted VMs, incarnations) lives in the engine's state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, TypeVar

from forewarn.contract import EventType
from forewarn.fleet.azure import DEFAULT_RESOURCE_GROUP, DEFAULT_SUBSCRIPTION, AzureNames
from forewarn.fleet.errors import FleetError, UnknownName
from forewarn.fleet.vm import VM
from forewarn.fleet.vmtable import FleetRange, GivenRun, VmTable
from forewarn.fleet.walk import UpdateDomainWalk

__all__ = ["VM", "Scope", "ScopeKind", "ScopePolicy", "Topology"]

K = TypeVar("K")


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


@dataclass(frozen=True, slots=True)
class Scope:
    """A fabric-controller tenant: every VM in it sees every event of it."""

    id: str
    kind: ScopeKind
    vm_names: Sequence[str]  # a FleetRange for VMs made from a count
    policy: ScopePolicy = field(default_factory=ScopePolicy)
    update_domains: int = 1
    fault_domains: int = 1

    @property
    def role_instances(self) -> bool:
        """Cloud-service names never get the 2017-03-01 underscore."""
        return self.kind is ScopeKind.CLOUD_SERVICE


class Topology:
    """Scopes and VMs with the look-ups the endpoint and the engine need.

    ``vms`` is a ``VmTable``: the fleet file's counted VMs are made on first use, so a
    million-VM fleet starts in time linear in its scopes, not its VMs (``vmtable``).
    """

    def __init__(
        self,
        scopes: Iterable[Scope],
        vms: Iterable[VM] | VmTable,
        default_vm: str | None,
        *,
        subscription: str | None = None,
        resource_group: str | None = None,
        tags: Mapping[str, tuple[tuple[str, str], ...]] | None = None,
    ) -> None:
        """``vms``: a table (``build_topology``'s) or the VMs themselves; ``subscription``,
        ``resource_group`` and ``tags`` (per scope id) are the fleet's Azure names
        (``azure``), the same on every surface."""
        self.scopes: dict[str, Scope] = {}
        for scope in scopes:
            if scope.id in self.scopes:
                raise FleetError(f"scope {scope.id!r} is defined twice")
            self.scopes[scope.id] = scope
        table = vms if isinstance(vms, VmTable) else VmTable([GivenRun(0, list(vms))])
        self.vms: VmTable = table
        if not isinstance(vms, VmTable):  # a table's VMs name the scopes it was built with
            unknown = {vm.scope_id for vm in table.values()}.difference(self.scopes)
            if unknown:
                vm = next(vm for vm in table.values() if vm.scope_id in unknown)
                raise FleetError(f"VM {vm.name!r} names unknown scope {vm.scope_id!r}")
        for scope in self.scopes.values():
            if isinstance(scope.vm_names, FleetRange):
                continue  # made from the table itself
            missing = [n for n in scope.vm_names if n not in table]
            if missing:
                raise FleetError(f"scope {scope.id!r} lists unknown VMs {missing}")
        if default_vm is not None and default_vm not in table:
            raise FleetError(f"default VM {default_vm!r} is not in the fleet")
        self.default_vm = default_vm
        self.azure = AzureNames(
            self,
            subscription or DEFAULT_SUBSCRIPTION,
            resource_group or DEFAULT_RESOURCE_GROUP,
            dict(tags or {}),
        )
        self._walk: UpdateDomainWalk | None = None

    def update_domain_walk(self) -> UpdateDomainWalk:
        """The region-wide walk, update domain by update domain and host by host, built
        on first use (one pass over the fleet; a server builds it off its event loop)."""
        walk = self._walk
        if walk is None:
            walk = self._walk = UpdateDomainWalk(self.vms)
        return walk

    def vm(self, name: str) -> VM:
        """The VM called ``name`` (exact match first, then ignoring case)."""
        found = self.vms.find(name)
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
        """Host name → the VMs on it, in fleet order (makes every VM: ``host_names`` and
        ``vms_on_host`` do not)."""
        at = self.vms.at
        return {host: [at(i) for i in on] for host, on in self.vms.host_index().items()}

    def host_names(self) -> list[str]:
        """Every host's name, in the order hosts first appear in the fleet."""
        return list(self.vms.host_index())

    def vms_on_host(self, host: str) -> list[VM]:
        """The VMs on ``host``."""
        positions = self.vms.host_index().get(host)
        if not positions:
            raise UnknownName(f"no host named {host!r}")
        at = self.vms.at
        return [at(i) for i in positions]

    def classify(self, name: str) -> tuple[str, str]:
        """What ``name`` is: ``("vm", name)``, ``("host", name)`` or ``("scope", name)``.

        VMs are looked up first, then hosts, then scopes.
        """
        try:
            return ("vm", self.vm(name).name)
        except UnknownName:
            pass
        if name in self.vms.host_index():
            return ("host", name)
        if name in self.scopes:
            return ("scope", name)
        raise UnknownName(f"{name!r} is neither a VM, a host nor a scope of this fleet")

    def address_map(self) -> Mapping[str, VM]:
        """Source address → VM (read-only, for look-ups on a hot path: one dict look-up
        for a VM seen before)."""
        return _Lookup(self.vms.by_address, lambda: (vm.address for vm in self.vms.values()))

    def port_map(self) -> Mapping[int, VM]:
        """Dedicated port → VM (read-only; empty when no VM has a port of its own)."""
        if not self.vms.has_ports:
            return MappingProxyType({})
        return _Lookup(
            self.vms.by_port, lambda: (vm.port for vm in self.vms.values() if vm.port is not None)
        )


class _Lookup(Mapping[K, VM]):
    """A read-only key → VM map over a table's look-up: each key found once, then kept."""

    __slots__ = ("_find", "_keys", "_seen")

    def __init__(self, find: Callable[[K], VM | None], keys: Callable[[], Iterable[K]]) -> None:
        self._find = find
        self._keys = keys
        self._seen: dict[K, VM] = {}

    def get(self, key: K, default: Any = None) -> Any:
        vm = self._seen.get(key)
        if vm is None:
            vm = self._find(key)
            if vm is None:
                return default
            self._seen[key] = vm
        return vm

    def __getitem__(self, key: K) -> VM:
        vm = self.get(key)
        if vm is None:
            raise KeyError(key)
        return vm  # type: ignore[no-any-return]

    def __contains__(self, key: object) -> bool:
        return self.get(key) is not None  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[K]:
        return iter(self._keys())

    def __len__(self) -> int:
        return sum(1 for _ in self._keys())
