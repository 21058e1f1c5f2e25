"""Fleet files: a YAML description of scopes and VMs, turned into a Topology.

The schema is msgspec Structs, so a mistake is reported with its path
(``$.scopes[1].update_domains``) instead of surfacing later as a KeyError.
Anything the file leaves out (hosts, domains, addresses) is assigned deterministically,
so the same file always yields the same fleet.
"""

from __future__ import annotations

import ipaddress
import re
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import msgspec
import yaml

from .errors import FleetError
from .topology import VM, Scope, ScopeKind, ScopePolicy, Topology
from .yamlfile import YamlError, read_yaml

__all__ = [
    "FleetSpec",
    "build_topology",
    "demo_fleet",
    "fleet_from_builtins",
    "fleet_to_builtins",
    "load_fleet_file",
]

MAX_AUTO_ADDRESSES = 250 * 250


class VmSpec(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """One VM written out by hand; anything omitted is assigned."""

    name: str
    host: str | None = None
    update_domain: int | None = None
    fault_domain: int | None = None
    zone: str | None = None
    address: str | None = None
    port: int | None = None
    spot: bool | None = None


class TerminateSpec(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Terminate notifications of a scale set."""

    enabled: bool = True
    timeout_minutes: int = 5


class ScopeSpec(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """One scope; ``vms`` is a count (names generated) or explicit VMs."""

    kind: Literal["standalone", "availability_set", "scale_set", "cloud_service"]
    name: str
    vms: int | list[VmSpec] | None = None
    roles: dict[str, int] | None = None
    update_domains: int = 5
    fault_domains: int = 2
    placement_groups: int = 1
    zones: list[str] | None = None
    spot: bool = False
    gpu: bool = False
    terminate_notification: TerminateSpec | None = None
    auto_approve: list[Literal["reboot", "redeploy"]] | None = None
    preview_limit: bool = False


class FleetSpec(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A whole fleet file."""

    scopes: list[ScopeSpec]
    location: str = "westeurope"
    hosts: int | None = None
    default_vm: str | None = None
    address_prefix: str = "127.1"
    port_base: int | None = None


def load_fleet_file(path: str | Path) -> FleetSpec:
    """Read and validate a YAML (or JSON) fleet file."""
    try:
        raw = read_yaml(path)
    except OSError as exc:
        raise FleetError(f"cannot read fleet file {path}: {exc.strerror}") from None
    except YamlError as exc:
        raise FleetError(f"fleet file {exc}") from None
    return fleet_from_builtins(raw, origin=str(path))


def fleet_from_builtins(raw: Any, origin: str = "fleet") -> FleetSpec:
    """Validate plain data (from YAML, JSON or the database) as a fleet."""
    try:
        return msgspec.convert(raw, FleetSpec)
    except msgspec.ValidationError as exc:
        raise FleetError(f"{origin}: {exc}") from None


def fleet_to_builtins(spec: FleetSpec) -> dict[str, Any]:
    """Plain data for storing a fleet and comparing two of them."""
    out: dict[str, Any] = msgspec.to_builtins(spec)
    return out


def demo_fleet() -> FleetSpec:
    """The built-in demo fleet: one scope of every kind."""
    text = resources.files(__package__).joinpath("demo-fleet.yaml").read_text(encoding="utf-8")
    return fleet_from_builtins(yaml.safe_load(text), origin="built-in demo fleet")


class _Assigner:
    """Hands out hosts and loopback addresses in fleet order."""

    def __init__(self, spec: FleetSpec, total_vms: int) -> None:
        if spec.hosts is not None and spec.hosts < 1:
            raise FleetError("hosts must be at least 1")
        self.host_count = spec.hosts or max(1, (total_vms + 3) // 4)
        self.prefix = spec.address_prefix
        try:
            ipaddress.ip_address(f"{self.prefix}.0.1")
        except ValueError:
            raise FleetError(f"address_prefix {self.prefix!r} must be like '127.1'") from None
        self.index = 0
        self.cursor = 0
        self.domains: dict[tuple[str, str], int] = {}
        self.port_base = spec.port_base
        if self.port_base is not None and not 1 <= self.port_base <= 65535 - total_vms:
            raise FleetError(f"port_base {self.port_base} leaves no room for {total_vms} ports")

    def next(self) -> tuple[str, int | None]:
        """Address and (with ``port_base``) dedicated port of the next VM."""
        i = self.index
        self.index += 1
        if i >= MAX_AUTO_ADDRESSES:
            raise FleetError(f"at most {MAX_AUTO_ADDRESSES} VMs get automatic addresses")
        address = f"{self.prefix}.{i // 250}.{i % 250 + 1}"
        port = None if self.port_base is None else self.port_base + i
        return address, port

    def host(self, scope_id: str, update_domain: int) -> str:
        """The next host, round robin, that holds no other update domain of this scope.

        A host never carries two update domains of one scope, so maintaining a host
        never takes down more than one update domain of any scope. When no host of the
        pool qualifies, the pool grows by one (``hosts`` is a minimum).
        """
        for step in range(self.host_count):
            index = (self.cursor + step) % self.host_count
            if self._fits(f"host-{index + 1}", scope_id, update_domain):
                break
        else:
            index = self.host_count
            self.host_count += 1
        self.cursor = (index + 1) % self.host_count
        name = f"host-{index + 1}"
        self.place(name, scope_id, update_domain)
        return name

    def place(self, host: str, scope_id: str, update_domain: int) -> None:
        """Record a VM on ``host`` (explicit hosts too, so automatic ones avoid clashes)."""
        self.domains.setdefault((host, scope_id), update_domain)

    def _fits(self, host: str, scope_id: str, update_domain: int) -> bool:
        held = self.domains.get((host, scope_id))
        return held is None or held == update_domain


def _generated_names(scope: ScopeSpec) -> list[VmSpec]:
    kind = ScopeKind(scope.kind)
    if kind is ScopeKind.CLOUD_SERVICE:
        if not scope.roles:
            raise FleetError(f"cloud service {scope.name!r} needs roles, e.g. {{FrontEnd: 2}}")
        return [
            VmSpec(f"{role}_IN_{n}") for role, count in scope.roles.items() for n in range(count)
        ]
    count = scope.vms if isinstance(scope.vms, int) else (1 if kind is ScopeKind.STANDALONE else 0)
    if count < 1:
        raise FleetError(f"scope {scope.name!r} needs at least one VM")
    if kind is ScopeKind.STANDALONE:
        if count != 1:
            raise FleetError(f"standalone scope {scope.name!r} holds exactly one VM")
        return [VmSpec(scope.name)]
    if kind is ScopeKind.SCALE_SET:
        return [VmSpec(f"{scope.name}_{i}") for i in range(count)]
    return [VmSpec(f"{scope.name}-{i}") for i in range(count)]


def _policy(scope: ScopeSpec) -> ScopePolicy:
    terminate = scope.terminate_notification
    if terminate is not None and ScopeKind(scope.kind) is not ScopeKind.SCALE_SET:
        raise FleetError(f"terminate_notification is a scale-set setting ({scope.name!r})")
    auto = set(scope.auto_approve or ())
    return ScopePolicy(
        auto_approve_user_reboot="reboot" in auto,
        auto_approve_user_redeploy="redeploy" in auto,
        terminate_notification=terminate is not None and terminate.enabled,
        terminate_timeout_minutes=terminate.timeout_minutes if terminate else 5,
        per_vm_visibility=scope.gpu and scope.fault_domains == 1,
        preview_user_operation_limit=scope.preview_limit,
    )


def _scope_ids(scope: ScopeSpec) -> list[str]:
    if scope.placement_groups < 1:
        raise FleetError(f"scope {scope.name!r}: placement_groups must be at least 1")
    if scope.placement_groups == 1:
        return [scope.name]
    if ScopeKind(scope.kind) is not ScopeKind.SCALE_SET:
        raise FleetError(f"placement_groups is a scale-set setting ({scope.name!r})")
    return [f"{scope.name}/pg{k}" for k in range(scope.placement_groups)]


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


def _check_names(spec: FleetSpec, vm_lists: list[list[VmSpec]]) -> None:
    """Names as Azure allows them: they end up in documents, URLs and log lines."""
    if not spec.scopes:
        raise FleetError("a fleet needs at least one scope")
    for scope, vm_specs in zip(spec.scopes, vm_lists, strict=True):
        if not _NAME.fullmatch(scope.name):
            raise FleetError(f"scope name {scope.name!r} must be letters, digits, '.', '-', '_'")
        for vm in vm_specs:
            if not _NAME.fullmatch(vm.name):
                raise FleetError(f"VM name {vm.name!r} must be letters, digits, '.', '-', '_'")
            if vm.port is not None and not 1 <= vm.port <= 65535:
                raise FleetError(f"VM {vm.name!r}: port {vm.port} is outside 1..65535")


def build_topology(spec: FleetSpec) -> Topology:
    """Expand a fleet spec into scopes and VMs, assigning what the file left out."""
    vm_lists = [
        scope.vms if isinstance(scope.vms, list) else _generated_names(scope)
        for scope in spec.scopes
    ]
    _check_names(spec, vm_lists)
    assigner = _Assigner(spec, sum(len(v) for v in vm_lists))
    scopes: list[Scope] = []
    vms: list[VM] = []
    for scope, vm_specs in zip(spec.scopes, vm_lists, strict=True):
        if scope.kind == "standalone" and len(vm_specs) != 1:
            raise FleetError(f"standalone scope {scope.name!r} holds exactly one VM")
        if not vm_specs:
            raise FleetError(f"scope {scope.name!r} needs at least one VM")
        if scope.update_domains < 1 or scope.fault_domains < 1:
            raise FleetError(f"scope {scope.name!r}: domain counts must be at least 1")
        kind = ScopeKind(scope.kind)
        policy = _policy(scope)
        scope_ids = _scope_ids(scope)
        members: dict[str, list[str]] = {sid: [] for sid in scope_ids}
        for i, vm_spec in enumerate(vm_specs):
            scope_id = scope_ids[i % len(scope_ids)]
            address, port = assigner.next()
            update_domain = _domain(vm_spec.update_domain, i, scope.update_domains, "update")
            zones = scope.zones or [""]
            vms.append(
                VM(
                    name=vm_spec.name,
                    scope_id=scope_id,
                    host=_host(assigner, vm_spec, scope_id, update_domain),
                    address=vm_spec.address or address,
                    update_domain=update_domain,
                    fault_domain=_domain(vm_spec.fault_domain, i, scope.fault_domains, "fault"),
                    zone=vm_spec.zone if vm_spec.zone is not None else zones[i % len(zones)],
                    port=vm_spec.port if vm_spec.port is not None else port,
                    spot=vm_spec.spot if vm_spec.spot is not None else scope.spot,
                    scale_set=scope.name if kind is ScopeKind.SCALE_SET else "",
                    location=spec.location,
                )
            )
            members[scope_id].append(vm_spec.name)
        for scope_id, names in members.items():
            if not names:
                raise FleetError(f"placement group {scope_id!r} would hold no VM")
            scopes.append(
                Scope(
                    scope_id, kind, tuple(names), policy, scope.update_domains, scope.fault_domains
                )
            )
    _check_addresses(vms)
    _check_hosts(vms)
    default = spec.default_vm or (vms[0].name if vms else None)
    return Topology(scopes, vms, default)


def _host(assigner: _Assigner, vm: VmSpec, scope_id: str, update_domain: int) -> str:
    if vm.host is None:
        return assigner.host(scope_id, update_domain)
    assigner.place(vm.host, scope_id, update_domain)
    return vm.host


def _domain(explicit: int | None, index: int, count: int, what: str) -> int:
    if explicit is None:
        return index % count
    if not 0 <= explicit < count:
        raise FleetError(f"{what} domain {explicit} is outside 0..{count - 1}")
    return explicit


def _check_hosts(vms: list[VM]) -> None:
    """Maintenance of one host must never span two update domains of one scope (S4)."""
    seen: dict[tuple[str, str], VM] = {}
    for vm in vms:
        other = seen.setdefault((vm.host, vm.scope_id), vm)
        if other.update_domain != vm.update_domain:
            raise FleetError(
                f"host {vm.host!r} carries {other.name!r} (update domain {other.update_domain}) "
                f"and {vm.name!r} (update domain {vm.update_domain}) of scope {vm.scope_id!r}; "
                "a host holds one update domain of a scope"
            )


def _check_addresses(vms: list[VM]) -> None:
    for vm in vms:
        try:
            ipaddress.ip_address(vm.address)
        except ValueError:
            raise FleetError(f"VM {vm.name!r} has an invalid address {vm.address!r}") from None
