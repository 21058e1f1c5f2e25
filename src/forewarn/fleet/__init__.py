"""The fleet format: fleet files, their schema and validation, and their layout into a topology.

Pure: scopes, VMs, hosts, domains, addresses and ports, decided before any platform is built.
Below the fabric, which runs operations over the topology built here.
"""

from forewarn.fleet.errors import FleetError, UnknownName, YamlError
from forewarn.fleet.loader import (
    FleetSpec,
    build_topology,
    demo_fleet,
    fleet_from_builtins,
    fleet_to_builtins,
    load_fleet_file,
)
from forewarn.fleet.topology import VM, Scope, ScopeKind, ScopePolicy, Topology
from forewarn.fleet.yamlfile import read_yaml

__all__ = [
    "VM",
    "FleetError",
    "FleetSpec",
    "Scope",
    "ScopeKind",
    "ScopePolicy",
    "Topology",
    "UnknownName",
    "YamlError",
    "build_topology",
    "demo_fleet",
    "fleet_from_builtins",
    "fleet_to_builtins",
    "load_fleet_file",
    "read_yaml",
]
