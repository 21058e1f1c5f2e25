"""The running server's fleet as the scenario engine sees it (from ``/api/v1/topology``).

Only what choosing targets needs: hosts, scopes, and per VM its scope, host, update
domain and whether it is Spot, in a scale set, or deleted. Plain data from JSON, so the
engine never needs the fabric's own topology types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from forewarn.fleet.names import natural

__all__ = ["FleetView", "ScopeInfo", "VmInfo"]


@dataclass(frozen=True, slots=True)
class VmInfo:
    name: str
    scope: str
    host: str
    update_domain: int
    spot: bool
    status: str


@dataclass(frozen=True, slots=True)
class ScopeInfo:
    id: str
    kind: str
    update_domains: int
    terminate_notification: bool
    per_vm_visibility: bool
    vms: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FleetView:
    """Scopes, VMs and hosts of a fleet, in fleet order."""

    scopes: dict[str, ScopeInfo]
    vms: dict[str, VmInfo]
    default_vm: str | None

    @classmethod
    def from_topology(cls, data: dict[str, Any]) -> FleetView:
        """From the control API's ``GET /api/v1/topology`` answer."""
        scopes: dict[str, ScopeInfo] = {}
        vms: dict[str, VmInfo] = {}
        for scope in data["scopes"]:
            policy = scope.get("policy") or {}
            scopes[scope["id"]] = ScopeInfo(
                id=scope["id"],
                kind=scope["kind"],
                update_domains=int(scope.get("update_domains", 1)),
                terminate_notification=bool(policy.get("terminate_notification")),
                per_vm_visibility=bool(policy.get("per_vm_visibility")),
                vms=tuple(vm["name"] for vm in scope["vms"]),
            )
            for vm in scope["vms"]:
                vms[vm["name"]] = VmInfo(
                    name=vm["name"],
                    scope=scope["id"],
                    host=vm["host"],
                    update_domain=int(vm["update_domain"]),
                    spot=bool(vm["spot"]),
                    status=str(vm.get("status", "running")),
                )
        return cls(scopes, vms, data.get("default_vm"))

    def hosts(self) -> dict[str, list[VmInfo]]:
        """Host → its VMs, hosts in natural order."""
        out: dict[str, list[VmInfo]] = {}
        for vm in self.vms.values():
            out.setdefault(vm.host, []).append(vm)
        return {host: out[host] for host in sorted(out, key=natural)}

    def live(self, name: str) -> bool:
        """True for a VM that exists and has not been deleted."""
        vm = self.vms.get(name)
        return vm is not None and vm.status != "deleted"

    def scope_of(self, vm: str) -> ScopeInfo:
        return self.scopes[self.vms[vm].scope]
