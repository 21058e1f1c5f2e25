"""From an operation request to the VMs it touches, validated.

A request names VMs, a host, or a scope. A scope target is platform maintenance that
walks the scope's update domains one batch at a time (a rollout).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .catalogue import OperationSpec, spec_for
from .errors import InvalidOperation
from .topology import VM, ScopeKind, Topology

__all__ = ["OperationRequest", "Plan", "group_key", "plan_request"]

MAX_NOTICE = 7 * 24 * 3600.0


@dataclass(frozen=True, slots=True)
class OperationRequest:
    """What a user, the control API or a scenario asks the platform to do.

    Exactly one of ``vms``, ``host`` and ``scope`` names the target. ``notice_seconds``,
    ``description`` and ``duration_seconds`` override the catalogue (not scaled).
    """

    kind: str
    vms: tuple[str, ...] = ()
    host: str | None = None
    scope: str | None = None
    notice_seconds: float | None = None
    description: str | None = None
    duration_seconds: int | None = None

    @property
    def target(self) -> str:
        """A short human description of the target, for listings and history."""
        if self.host is not None:
            return f"host {self.host}"
        if self.scope is not None:
            return f"scope {self.scope}"
        return "vm " + ",".join(self.vms)


@dataclass(frozen=True, slots=True)
class Plan:
    """A validated request: its spec and the batches of VMs (one batch unless rolling)."""

    request: OperationRequest
    spec: OperationSpec
    batches: tuple[tuple[str, ...], ...]

    @property
    def rolling(self) -> bool:
        """True when the work walks update domains."""
        return self.request.scope is not None


def group_key(vm: VM) -> tuple[str, str, int]:
    """VMs share an event only when they share scope, host and update domain."""
    return (vm.scope_id, vm.host, vm.update_domain)


def _live(vms: Iterable[VM], is_deleted: Callable[[str], bool]) -> list[VM]:
    return [vm for vm in vms if not is_deleted(vm.name)]


def _resolve(
    request: OperationRequest, topology: Topology, is_deleted: Callable[[str], bool]
) -> tuple[list[VM], bool]:
    named = [request.vms != (), request.host is not None, request.scope is not None]
    if sum(named) != 1:
        raise InvalidOperation("name exactly one target: VMs, a host, or a scope")
    if request.vms:
        vms = [topology.vm(n) for n in request.vms]
        if len({vm.name for vm in vms}) != len(vms):
            raise InvalidOperation("a VM is named twice")
        gone = [vm.name for vm in vms if is_deleted(vm.name)]
        if gone:
            raise InvalidOperation(f"VM {gone[0]!r} has been deleted")
        return vms, False
    if request.host is not None:
        vms = _live(topology.vms_on_host(request.host), is_deleted)
        if not vms:
            raise InvalidOperation(f"host {request.host!r} runs no live VM")
        return vms, False
    assert request.scope is not None
    scope = topology.scope(request.scope)
    vms = _live((topology.vms[n] for n in scope.vm_names), is_deleted)
    if not vms:
        raise InvalidOperation(f"scope {request.scope!r} has no live VM")
    return vms, True


def _check_spec(spec: OperationSpec, vms: list[VM], rolling: bool, topology: Topology) -> None:
    if spec.user_initiated and not spec.needs_scale_set and len(vms) != 1:
        raise InvalidOperation(f"{spec.kind.value} applies to one VM; name a single VM")
    if spec.user_initiated and rolling:
        raise InvalidOperation(f"{spec.kind.value} is a user operation; name a VM, not a scope")
    if spec.needs_spot:
        not_spot = [vm.name for vm in vms if not vm.spot]
        if not_spot:
            raise InvalidOperation(f"{spec.kind.value} needs Spot VMs; {not_spot[0]!r} is not")
    if spec.needs_scale_set:
        sets = sorted({vm.scale_set for vm in vms if vm.scale_set})
        if len(sets) > 1:
            raise InvalidOperation(
                f"{spec.kind.value} applies to one scale set at a time; got {', '.join(sets)}"
            )
        outside = [
            vm.name for vm in vms if topology.scopes[vm.scope_id].kind != ScopeKind.SCALE_SET
        ]
        if outside:
            raise InvalidOperation(
                f"{spec.kind.value} applies to scale-set instances; {outside[0]!r} is not one"
            )


def _check_overrides(request: OperationRequest, spec: OperationSpec, min_notice: float) -> None:
    notice = request.notice_seconds
    if notice is not None:
        if spec.created_started:
            raise InvalidOperation(f"{spec.kind.value} starts at once; it takes no notice")
        if not notice >= min_notice:
            raise InvalidOperation(
                f"notice {notice:g} s is below the minimum of {min_notice:g} s "
                f"for {spec.kind.value}"
            )
        if notice > (spec.max_notice or MAX_NOTICE):
            raise InvalidOperation(f"notice {notice:g} s is more than 7 days")
    duration = request.duration_seconds
    if duration is not None and duration < -1:
        raise InvalidOperation("duration_seconds must be -1 (unknown), 0 or positive")


def plan_request(
    request: OperationRequest,
    topology: Topology,
    is_deleted: Callable[[str], bool],
    min_notice: Callable[[OperationSpec, list[VM]], float],
) -> Plan:
    """Validate ``request`` and split its VMs into batches; raises a FabricError subclass."""
    try:
        spec = spec_for(request.kind)
    except ValueError as exc:
        raise InvalidOperation(str(exc)) from None
    vms, rolling = _resolve(request, topology, is_deleted)
    _check_spec(spec, vms, rolling, topology)
    _check_overrides(request, spec, min_notice(spec, vms))
    if not rolling:
        return Plan(request, spec, (tuple(vm.name for vm in vms),))
    by_domain: dict[int, list[str]] = {}
    for vm in sorted(vms, key=lambda v: v.update_domain):
        by_domain.setdefault(vm.update_domain, []).append(vm.name)
    return Plan(request, spec, tuple(tuple(names) for names in by_domain.values()))
