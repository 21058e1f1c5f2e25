"""Fleet files: a YAML description of scopes and VMs, turned into a Topology.

The format is the msgspec Structs of ``fleetspec``: they validate a file, and the JSON
Schema that editors and ``forewarn fleet schema`` use is generated from them, so the
documentation cannot drift from the parser. A mistake is reported with its path
(``$.scopes[1].update_domains``) and, for a file, its line, instead of surfacing later as
a KeyError; the checks msgspec cannot express say where too, and every error names where
the fleet came from (the file, or the database that stored it). Anything the file leaves
out (hosts, domains, addresses, ports) is assigned deterministically (``layout``), so the
same file always yields the same fleet.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec
import yaml

from forewarn.fleet.errors import FleetError
from forewarn.fleet.layout import AddressPlan, HostAssigner, normalize_address, parse_prefix
from forewarn.fleet.spec import (
    EXAMPLE_FLEETS,
    FleetSpec,
    ScopeSpec,
    VmSpec,
    example_fleet_text,
    fleet_schema,
)
from forewarn.fleet.topology import VM, Scope, ScopeKind, ScopePolicy, Topology
from forewarn.fleet.vmtable import CountedRun, FleetRange, GivenRun, VmTable
from forewarn.fleet.yamlfile import YamlError, line_of, read_yaml

__all__ = [
    "EXAMPLE_FLEETS",
    "MAX_VMS",
    "FleetSpec",
    "build_topology",
    "demo_fleet",
    "example_fleet_text",
    "fleet_from_builtins",
    "fleet_origin",
    "fleet_schema",
    "fleet_to_builtins",
    "load_fleet_file",
]

#: A typo such as ``vms: 100000000`` should be one clear line, not an exhausted machine.
MAX_VMS = 1_000_000


def fleet_origin(spec: FleetSpec) -> str:
    """Where ``spec`` came from (``fleet file x.yaml``, …), for error messages."""
    origin: str = spec.__dict__.get("origin", "fleet")
    return origin


class _Located(FleetError):
    """A fleet mistake and the path of the entry it is about (``$.scopes[0].name``).

    The path is in the message when it helps a reader (``- at `…` ``); for the others
    (a duplicate name) it only finds the line.
    """

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


_PATH_IN_MESSAGE = re.compile(r" - at `(\$[^`]*)`$")
_UNKNOWN_FIELD = re.compile(r"^Object contains unknown field `([^`]+)`")


def _path_of(exc: Exception) -> str | None:
    """The path an error is about: its own, or the one msgspec wrote in its message."""
    if isinstance(exc, _Located):
        return exc.path
    message = str(exc)
    found = _PATH_IN_MESSAGE.search(message)
    path = found.group(1) if found else None
    unknown = _UNKNOWN_FIELD.match(message)
    if unknown:  # msgspec names the object; the line is the unknown key's
        return f"{path or '$'}.{unknown.group(1)}"
    return path


def _where(origin: str, source: str | None, exc: Exception) -> str:
    """``fleet file x.yaml, line 7`` when the file and the entry's line are known."""
    path = _path_of(exc)
    line = line_of(source, path) if source is not None and path is not None else None
    return origin if line is None else f"{origin}, line {line}"


def load_fleet_file(path: str | Path) -> FleetSpec:
    """Read and validate a YAML (or JSON) fleet file."""
    try:
        raw = read_yaml(path)
    except OSError as exc:
        raise FleetError(f"cannot read fleet file {path}: {exc.strerror or exc}") from None
    except YamlError as exc:
        raise FleetError(f"fleet file {exc}") from None
    return fleet_from_builtins(raw, origin=f"fleet file {path}", source=str(path))


def fleet_from_builtins(raw: Any, origin: str = "fleet", source: str | None = None) -> FleetSpec:
    """Validate plain data (from YAML, JSON or the database) as a fleet.

    ``source``: the file the data was read from, so that errors (here and in
    ``build_topology``) name the line of the entry they are about.
    """
    try:
        spec = msgspec.convert(raw, FleetSpec)
    except msgspec.ValidationError as exc:
        raise FleetError(f"{_where(origin, source, exc)}: {exc}") from None
    spec.__dict__["origin"] = origin
    spec.__dict__["source"] = source
    return spec


def fleet_to_builtins(spec: FleetSpec) -> dict[str, Any]:
    """Plain data for storing a fleet and comparing two of them."""
    out: dict[str, Any] = msgspec.to_builtins(spec)
    return out


def demo_fleet() -> FleetSpec:
    """The built-in demo fleet: one scope of every kind."""
    text = resources.files(__package__).joinpath("demo-fleet.yaml").read_text(encoding="utf-8")
    return fleet_from_builtins(yaml.safe_load(text), origin="built-in demo fleet")


def _error(message: str, path: str) -> FleetError:
    """An error that says where in the file, in msgspec's notation (``$.scopes[1].vms``)."""
    return _Located(f"{message} - at `{path}`", path)


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")
_NAME_RULE = "must be 1-80 letters, digits, '.', '-', '_' (starting with a letter or digit)"


def _check_name(what: str, name: str, where: str) -> None:
    """Names as Azure allows them: they end up in documents, URLs and log lines."""
    if not _NAME.fullmatch(name):
        raise _error(f"{what} name {name!r} {_NAME_RULE}", where)


def _count(scope: ScopeSpec, where: str) -> int:
    """How many VMs a scope asks for, before any name is made."""
    kind = ScopeKind(scope.kind)
    if isinstance(scope.vms, list):
        count = len(scope.vms)
    elif kind is ScopeKind.CLOUD_SERVICE:
        if not scope.roles:
            raise _error(f"cloud service {scope.name!r} needs roles, e.g. {{FrontEnd: 2}}", where)
        count = sum(max(0, n) for n in scope.roles.values())
    elif scope.vms is None:
        count = 1 if kind is ScopeKind.STANDALONE else 0
    else:
        count = scope.vms
    if count < 1:
        raise _error(f"scope {scope.name!r} needs at least one VM", where + ".vms")
    if kind is ScopeKind.STANDALONE and count != 1:
        raise _error(f"standalone scope {scope.name!r} holds exactly one VM", where)
    if count > MAX_VMS:
        raise _error(
            f"scope {scope.name!r} asks for {count} VMs; a fleet holds at most {MAX_VMS}",
            where + ".vms",
        )
    groups = scope.placement_groups
    if groups > count:  # checked before a single group is made
        raise _error(
            f"scope {scope.name!r} asks for {groups} placement groups for {count} VMs; "
            "each group holds at least one VM",
            where + ".placement_groups",
        )
    return count


#: VMs named from a count: ``(prefix, count)``, named ``prefix0`` … (``vmtable``).
Counted = tuple[str, int]
#: A scope entry's VMs: as written in the file, or counted runs.
Entries = Sequence[VmSpec | Counted]


def _vm_specs(scope: ScopeSpec, where: str) -> Entries:
    """The scope's VMs: as written, or named from the count (names checked once)."""
    if isinstance(scope.vms, list):
        for j, vm in enumerate(scope.vms):
            _check_name("VM", vm.name, f"{where}.vms[{j}].name")
        return scope.vms
    kind = ScopeKind(scope.kind)
    if kind is ScopeKind.CLOUD_SERVICE:
        assert scope.roles is not None  # _count checked
        out: list[Counted] = []
        for role, count in scope.roles.items():
            _check_name("role", f"{role}_IN_{max(0, count - 1)}", f"{where}.roles.{role}")
            if count > 0:
                out.append((f"{role}_IN_", count))
        return out
    if kind is ScopeKind.STANDALONE:
        return [VmSpec(scope.name)]
    count = scope.vms if isinstance(scope.vms, int) else 0
    sep = "_" if kind is ScopeKind.SCALE_SET else "-"
    _check_name("VM", f"{scope.name}{sep}{count - 1}", f"{where}.name")  # the longest one
    return [(f"{scope.name}{sep}", count)]


def _entry_count(entries: Entries) -> int:
    """How many VMs a scope entry's ``_vm_specs`` make."""
    return sum(e[1] if isinstance(e, tuple) else 1 for e in entries)


def _policy(scope: ScopeSpec, where: str) -> ScopePolicy:
    terminate = scope.terminate_notification
    if terminate is not None and ScopeKind(scope.kind) is not ScopeKind.SCALE_SET:
        raise _error(
            f"terminate_notification is a scale-set setting ({scope.name!r})",
            where + ".terminate_notification",
        )
    auto = set(scope.auto_approve or ())
    try:
        return ScopePolicy(
            auto_approve_user_reboot="reboot" in auto,
            auto_approve_user_redeploy="redeploy" in auto,
            terminate_notification=terminate is not None and terminate.enabled,
            terminate_timeout_minutes=terminate.timeout_minutes if terminate else 5,
            per_vm_visibility=scope.gpu and scope.fault_domains == 1,
            preview_user_operation_limit=scope.preview_limit,
            event_grid_and_resource_graph=scope.event_grid,
        )
    except FleetError as exc:
        raise _error(str(exc), where + ".terminate_notification") from None


def _scope_ids(scope: ScopeSpec, where: str) -> list[str]:
    if scope.placement_groups < 1:
        raise _error(
            f"scope {scope.name!r}: placement_groups must be at least 1",
            where + ".placement_groups",
        )
    if scope.placement_groups == 1:
        return [scope.name]
    if ScopeKind(scope.kind) is not ScopeKind.SCALE_SET:
        raise _error(
            f"placement_groups is a scale-set setting ({scope.name!r})", where + ".placement_groups"
        )
    return [f"{scope.name}/pg{k}" for k in range(scope.placement_groups)]


def build_topology(spec: FleetSpec) -> Topology:
    """Expand a fleet spec into scopes and VMs, assigning what the file left out.

    Every error starts with where the fleet came from (``fleet file x.yaml: …``).
    """
    try:
        return _build(spec)
    except FleetError as exc:
        source = spec.__dict__.get("source")
        raise FleetError(f"{_where(fleet_origin(spec), source, exc)}: {exc}") from None


_SUBSCRIPTION = re.compile(r"^[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")
#: ARM's rule for a resource group's name.
_RESOURCE_GROUP = re.compile(r"^[-\w._()]{1,90}$")
_TAG_KEY_FORBIDDEN = set("<>%&\\?/")


def _check_azure_names(spec: FleetSpec, wheres: list[str]) -> None:
    """The subscription, resource group and tags as Azure would accept them."""
    if spec.subscription is not None and not _SUBSCRIPTION.match(spec.subscription):
        raise _error(
            f"subscription {spec.subscription[:60]!r} is not a GUID "
            "(like 11111111-2222-3333-4444-555555555555)",
            "$.subscription",
        )
    group = spec.resource_group
    if group is not None and (not _RESOURCE_GROUP.match(group) or group.endswith(".")):
        raise _error(
            f"resource group {group[:100]!r} must be 1-90 letters, digits, '-', '_', '.', "
            "'(' or ')', not ending in '.'",
            "$.resource_group",
        )
    tag_sets = [(spec.tags, "$.tags")]
    tag_sets += [(scope.tags, f"{w}.tags") for scope, w in zip(spec.scopes, wheres, strict=True)]
    for tags, where in tag_sets:
        for key, value in (tags or {}).items():
            if not key or len(key) > 512 or _TAG_KEY_FORBIDDEN.intersection(key):
                raise _error(
                    f"tag name {key[:60]!r} must be 1-512 characters without < > % & \\ ? /",
                    where,
                )
            if len(value) > 256:
                raise _error(f"tag {key[:60]!r}: a value holds at most 256 characters", where)


def _build(spec: FleetSpec) -> Topology:
    if not spec.scopes:
        raise _error("a fleet needs at least one scope", "$.scopes")
    if spec.hosts is not None and spec.hosts < 1:
        raise _error("hosts must be at least 1", "$.hosts")
    try:
        parse_prefix(spec.address_prefix)
    except FleetError as exc:
        raise _error(str(exc), "$.address_prefix") from None
    wheres = [f"$.scopes[{k}]" for k in range(len(spec.scopes))]
    for scope, where in zip(spec.scopes, wheres, strict=True):
        _check_name("scope", scope.name, f"{where}.name")
    total = sum(_count(scope, where) for scope, where in zip(spec.scopes, wheres, strict=True))
    if total > MAX_VMS:
        raise FleetError(f"the fleet asks for {total} VMs; it may hold at most {MAX_VMS}")
    vm_lists = [_vm_specs(s, where) for s, where in zip(spec.scopes, wheres, strict=True)]
    port_base = spec.port_base
    if port_base is not None and not 1 <= port_base <= 65535 - total:
        raise _error(f"port_base {port_base} leaves no room for {total} ports", "$.port_base")
    addresses = AddressPlan(spec.address_prefix, total, _explicit_addresses(vm_lists, wheres))
    hosts = HostAssigner(spec.hosts or max(1, (total + 3) // 4))
    explicit_hosts = False
    runs: list[GivenRun | CountedRun] = []
    members: list[tuple[str, ScopeKind, range | list[str], ScopePolicy, int, int]] = []
    scope_tags: dict[str, tuple[tuple[str, str], ...]] = {}
    _check_azure_names(spec, wheres)
    slot = 0
    for scope, vm_specs, where in zip(spec.scopes, vm_lists, wheres, strict=True):
        if scope.update_domains < 1 or scope.fault_domains < 1:
            raise _error(f"scope {scope.name!r}: domain counts must be at least 1", where)
        kind = ScopeKind(scope.kind)
        policy = _policy(scope, where)
        scope_ids = _scope_ids(scope, where)
        zones = scope.zones or [""]
        scale_set = scope.name if kind is ScopeKind.SCALE_SET else ""
        uds, fds, groups = scope.update_domains, scope.fault_domains, len(scope_ids)
        first = slot
        names: dict[str, list[str]] = {sid: [] for sid in scope_ids}
        given: list[VM] = []
        counted = [e for e in vm_specs if isinstance(e, tuple)]
        placed = hosts.assign_run(scope_ids, uds, sum(c for _, c in counted)) if counted else None
        for i, vm_spec in enumerate(vm_specs):
            if isinstance(vm_spec, tuple):  # a counted run: its hosts now, its VMs on use
                assert placed is not None
                prefix, count = vm_spec
                base = slot - first
                on = placed if len(counted) == 1 else placed[base : base + count]
                runs.append(
                    CountedRun(
                        start=slot, count=count, base=base, prefix=prefix, scope_ids=scope_ids,
                        update_domains=uds, fault_domains=fds, zones=zones, spot=scope.spot,
                        scale_set=scale_set, location=spec.location, hosts=on,
                    )
                )  # fmt: skip
                slot += count
                continue
            scope_id = scope_ids[i % groups]
            if vm_spec.update_domain is None:
                update_domain = i % uds
            else:
                update_domain = _domain(vm_spec.update_domain, uds, "update", where, i)
            if vm_spec.host is None:
                host = hosts.assign(scope_id, update_domain)
            else:
                host = vm_spec.host
                hosts.place(host, scope_id, update_domain)
                explicit_hosts = True
            if vm_spec.fault_domain is None:
                fault_domain = i % fds
            else:
                fault_domain = _domain(vm_spec.fault_domain, fds, "fault", where, i)
            if vm_spec.port is None:
                port = None if port_base is None else port_base + slot
            else:
                port = _port(vm_spec.port, where, i)
            given.append(
                VM(
                    name=vm_spec.name,
                    scope_id=scope_id,
                    host=host,
                    address=addresses.address(slot),
                    update_domain=update_domain,
                    fault_domain=fault_domain,
                    zone=zones[i % len(zones)] if vm_spec.zone is None else vm_spec.zone,
                    port=port,
                    spot=scope.spot if vm_spec.spot is None else vm_spec.spot,
                    scale_set=scale_set,
                    location=spec.location,
                )
            )
            names[scope_id].append(vm_spec.name)
            slot += 1
        if given:
            runs.append(GivenRun(first, given))
        for k, scope_id in enumerate(scope_ids):
            held: range | list[str] = names[scope_id] if given else range(first + k, slot, groups)
            if not held:
                raise _error(
                    f"placement group {scope_id!r} would hold no VM", where + ".placement_groups"
                )
            members.append((scope_id, kind, held, policy, uds, fds))
            merged = {**(spec.tags or {}), **(scope.tags or {})}
            if merged:
                scope_tags[scope_id] = tuple(sorted(merged.items()))
    seen: set[str] = set()
    for scope_id, *_ in members:  # before the VMs, as ``Topology`` checks
        if scope_id in seen:
            raise FleetError(f"scope {scope_id!r} is defined twice")
        seen.add(scope_id)
    try:
        table = VmTable(runs, addresses=addresses, port_base=port_base)
        if explicit_hosts:  # automatic hosts never break the rule; hosts from the file may
            _check_hosts(table.values())
        default = spec.default_vm
        if default and default not in table:
            raise _error(f"default VM {default!r} is not in the fleet", "$.default_vm")
        scopes = [
            Scope(sid, kind, FleetRange(table, held) if isinstance(held, range) else tuple(held),
                  policy, uds, fds)
            for sid, kind, held, policy, uds, fds in members
        ]  # fmt: skip
        return Topology(
            scopes,
            table,
            default or table.name_at(0),
            subscription=spec.subscription,
            resource_group=spec.resource_group,
            tags=scope_tags,
        )
    except _Located:
        raise
    except FleetError as exc:  # about two VMs: the second one's entry has the line
        every = list(VmTable(runs, addresses=addresses, port_base=port_base, check=False).values())
        path = _second_entry(exc, every, spec.scopes, vm_lists, wheres)
        raise exc if path is None else _Located(str(exc), path) from None


def _second_entry(
    exc: FleetError,
    vms: list[VM],
    scopes: list[ScopeSpec],
    vm_lists: list[Entries],
    wheres: list[str],
) -> str | None:
    """The entry of the VM that clashes with an earlier one (searched only on an error, in
    the order ``_check_hosts`` and ``Topology`` check), as a path."""
    message = str(exc)
    checks: list[tuple[str, Any]] = [
        ("host", lambda vm: (vm.host, vm.scope_id)),
        ("name", lambda vm: vm.name.lower()),
        ("address", lambda vm: vm.address),
        ("port", lambda vm: vm.port),
    ]
    for field, key in checks:
        if field == "host" and not message.startswith("host "):
            continue
        seen: dict[Any, VM] = {}
        for index, vm in enumerate(vms):
            if field == "port" and vm.port is None:
                continue
            other = seen.setdefault(key(vm), vm)
            clash = other.update_domain != vm.update_domain if field == "host" else other is not vm
            if clash:
                return _entry_path(index, scopes, vm_lists, wheres, field)
    return None


def _entry_path(
    index: int,
    scopes: list[ScopeSpec],
    vm_lists: list[Entries],
    wheres: list[str],
    field: str,
) -> str:
    """The path of the fleet's VM number ``index``: its own entry when written out, else
    its scope's (names made from a count come from the scope's name)."""
    for scope, vm_specs, where in zip(scopes, vm_lists, wheres, strict=True):
        count = _entry_count(vm_specs)
        if index < count:
            if isinstance(scope.vms, list):
                return f"{where}.vms[{index}].{field}"
            return f"{where}.name" if field == "name" else where
        index -= count
    return "$"


def _explicit_addresses(vm_lists: list[Entries], wheres: list[str]) -> dict[int, str]:
    """Fleet position → the VM's address from the file (normalized); invalid ones refused."""
    out: dict[int, str] = {}
    slot = 0
    for vm_specs, where in zip(vm_lists, wheres, strict=True):
        for j, vm in enumerate(vm_specs):
            if isinstance(vm, tuple):
                slot += vm[1]
                continue
            if vm.address is not None:
                address = normalize_address(vm.address)
                if address is None:
                    raise _error(
                        f"VM {vm.name!r} has an invalid address {vm.address!r}",
                        f"{where}.vms[{j}].address",
                    )
                out[slot] = address
            slot += 1
    return out


def _domain(explicit: int, count: int, what: str, where: str, index: int) -> int:
    if not 0 <= explicit < count:
        raise _error(
            f"{what} domain {explicit} is outside 0..{count - 1}",
            f"{where}.vms[{index}].{what}_domain",
        )
    return explicit


def _port(port: int, where: str, index: int) -> int:
    if not 1 <= port <= 65535:
        raise _error(f"port {port} is outside 1..65535", f"{where}.vms[{index}].port")
    return port


def _check_hosts(vms: Iterable[VM]) -> None:
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
