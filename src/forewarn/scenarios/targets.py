"""Choosing targets from the running server's fleet, so that a named scenario plays on any
fleet: ``{pick: spot-vm}`` is the first Spot VM, ``{pick: shared-host}`` the host that
carries the most scopes, and so on (``SELECTORS``)."""

from __future__ import annotations

from collections.abc import Callable

from forewarn.scenarios.fleetview import FleetView
from forewarn.scenarios.model import PickSpec, ScenarioError

__all__ = ["SELECTORS", "pick", "resolve"]


def _first(fleet: FleetView, wanted: Callable[[str], bool], what: str) -> str:
    for name in fleet.vms:
        if fleet.live(name) and wanted(name):
            return name
    raise ScenarioError(f"this fleet has no {what}")


def _vm(fleet: FleetView) -> str:
    default = fleet.default_vm
    if default is not None and fleet.live(default):
        return default
    return _first(fleet, lambda _: True, "live VM")


def _host(fleet: FleetView) -> str:
    for host, vms in fleet.hosts().items():
        if any(fleet.live(vm.name) for vm in vms):
            return host
    raise ScenarioError("this fleet has no host with a live VM")


def _shared_host(fleet: FleetView) -> str:
    """The host whose live VMs belong to the most scopes (the first such, in order)."""
    best, most = None, 0
    for host, vms in fleet.hosts().items():
        scopes = len({vm.scope for vm in vms if fleet.live(vm.name)})
        if scopes > most:
            best, most = host, scopes
    if best is None:
        raise ScenarioError("this fleet has no host with a live VM")
    return best


def _spot_vm(fleet: FleetView) -> str:
    return _first(fleet, lambda n: fleet.vms[n].spot, "live Spot VM (spot: true)")


def _scale_set_vm(fleet: FleetView) -> str:
    """A scale-set VM whose set announces termination, else any scale-set VM."""
    try:
        return _first(
            fleet,
            lambda n: (
                fleet.scope_of(n).kind == "scale_set"
                and fleet.scope_of(n).terminate_notification
                and not fleet.vms[n].spot
            ),
            "scale-set VM with terminate notifications",
        )
    except ScenarioError:
        return _first(fleet, lambda n: fleet.scope_of(n).kind == "scale_set", "scale-set VM")


def _scope(kinds: tuple[str, ...], what: str) -> Callable[[FleetView], str]:
    def choose(fleet: FleetView) -> str:
        for kind in kinds:  # in order of preference
            for scope in fleet.scopes.values():
                live = [n for n in scope.vms if fleet.live(n)]
                if scope.kind == kind and len({fleet.vms[n].update_domain for n in live}) > 1:
                    return scope.id
        raise ScenarioError(f"this fleet has no {what} with VMs in two update domains or more")

    return choose


_AVAILABILITY_SET = _scope(("availability_set",), "availability set")
_PLACEMENT_GROUP = _scope(("scale_set",), "scale-set placement group")
_ROLLING = _scope(("availability_set", "scale_set", "cloud_service"), "scope to roll")

#: Selector → how it chooses, and what it chooses (for ``scenario show``).
SELECTORS: dict[str, tuple[Callable[[FleetView], str], str]] = {
    "vm": (_vm, "the default VM (else the first)"),
    "host": (_host, "the first host"),
    "shared-host": (_shared_host, "the host carrying the most scopes"),
    "spot-vm": (_spot_vm, "the first Spot VM"),
    "scale-set-vm": (_scale_set_vm, "the first scale-set VM with terminate notifications"),
    "availability-set": (_AVAILABILITY_SET, "the first availability set"),
    "placement-group": (_PLACEMENT_GROUP, "the first scale-set placement group"),
    "rolling-scope": (_ROLLING, "the first availability set, else placement group"),
}


def pick(selector: str, fleet: FleetView) -> str:
    """The name ``selector`` chooses in ``fleet``."""
    try:
        choose, _ = SELECTORS[selector]
    except KeyError:
        known = ", ".join(SELECTORS)
        raise ScenarioError(f"unknown pick {selector!r}; known: {known}") from None
    return choose(fleet)


def resolve(
    target: str | tuple[str, ...] | PickSpec,
    fleet: FleetView,
    scenario_target: str | PickSpec | None,
) -> str | tuple[str, ...]:
    """A step's target as names: ``$target`` and picks replaced."""
    if isinstance(target, tuple):
        return tuple(str(resolve(name, fleet, scenario_target)) for name in target)
    if target == "$target":
        if scenario_target is None:
            raise ScenarioError("the scenario uses $target: give one with --target")
        return resolve(scenario_target, fleet, None)
    if isinstance(target, PickSpec):
        return pick(target.pick, fleet)
    return target
