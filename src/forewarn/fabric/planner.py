"""From an operation request to the VMs it touches, validated.

A request names VMs, a host, or a scope. A scope target is platform maintenance that
walks the scope's update domains one batch at a time (a rollout); only the operations that
Azure rolls out that way take one. User operations name VMs (the user asks for an instance,
never a host), and live migration, degraded or failed hardware and Spot eviction concern the
VMs of a host, not a whole availability set.

Notices are in the server's clock: a notice given with a request is not divided by the time
scale, so both of its bounds (the operation's minimum and maximum) are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from forewarn.fabric.catalogue import OperationKind, OperationSpec, spec_for
from forewarn.fabric.errors import InvalidOperation
from forewarn.fleet.topology import VM, ScopeKind, Topology

__all__ = ["OperationRequest", "Plan", "group_key", "plan_request"]

DAY = 24 * 3600.0
MAX_NOTICE = 7 * DAY
#: Platform maintenance that walks a scope's update domains (the only scope targets).
ROLLING_KINDS = frozenset(
    {OperationKind.HOST_UPDATE, OperationKind.PLATFORM_REBOOT, OperationKind.PLATFORM_REDEPLOY}
)
#: The longest interruption an event can announce (DurationInSeconds).
MAX_DURATION = 7 * 24 * 3600


@dataclass(frozen=True, slots=True)
class OperationRequest:
    """What a user, the control API or a scenario asks the platform to do.

    Exactly one of ``vms``, ``host`` and ``scope`` names the target. ``notice_seconds``,
    ``description`` and ``duration_seconds`` override the catalogue. ``notice_seconds`` is
    in the server's clock (never divided by the time scale; its bounds are);
    ``duration_seconds`` is what the event announces, as in production. ``via`` says
    where the request came from (``control``, ``arm``), for the history.
    """

    kind: str
    vms: tuple[str, ...] = ()
    host: str | None = None
    scope: str | None = None
    notice_seconds: float | None = None
    description: str | None = None
    duration_seconds: int | None = None
    via: str = "control"

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


def _check_target(spec: OperationSpec, request: OperationRequest) -> None:
    """Which kinds of target an operation takes (the README's operations table)."""
    kind = spec.kind.value
    if spec.user_initiated and request.scope is not None:
        raise InvalidOperation(f"{kind} is a user operation; name a VM, not a scope")
    if spec.user_initiated and request.host is not None:
        raise InvalidOperation(f"{kind} is a user operation; name a VM, not a host")
    if request.scope is not None and spec.kind not in ROLLING_KINDS:
        *others, last = (k.value for k in OperationKind if k in ROLLING_KINDS)
        rolling = f"{', '.join(others)} and {last}"
        raise InvalidOperation(
            f"{kind} concerns a VM or the VMs of a host, not a whole scope; name a VM or a "
            f"host (only {rolling} walk a scope's update domains)"
        )


def _check_spec(spec: OperationSpec, vms: list[VM], topology: Topology) -> None:
    if spec.user_initiated and not spec.needs_scale_set and len(vms) != 1:
        raise InvalidOperation(f"{spec.kind.value} applies to one VM; name a single VM")
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


def _at_scale(platform: str, time_scale: float) -> str:
    """What a bound in the server's clock is in platform time, when the clock is scaled."""
    return "" if time_scale == 1 else f" (time scale {time_scale:g}: {platform} of platform time)"


def _check_overrides(
    request: OperationRequest, spec: OperationSpec, min_notice: float, time_scale: float
) -> None:
    notice = request.notice_seconds
    kind = spec.kind.value
    if notice is not None:
        if spec.created_started:
            raise InvalidOperation(f"{kind} starts at once; it takes no notice")
        if not notice >= min_notice:
            raise InvalidOperation(
                f"notice {notice:g} s is below the minimum of {min_notice:g} s for {kind}"
                + _at_scale(f"{min_notice * time_scale:g} s", time_scale)
            )
        longest = spec.max_notice or MAX_NOTICE
        if notice > longest / time_scale:
            days = f"{longest / DAY:g} days"
            if time_scale == 1:
                raise InvalidOperation(f"notice {notice:g} s is more than {days}")
            raise InvalidOperation(
                f"notice {notice:g} s is more than the maximum of {longest / time_scale:g} s "
                f"for {kind}" + _at_scale(days, time_scale)
            )
    duration = request.duration_seconds
    if duration is not None and not -1 <= duration <= MAX_DURATION:
        raise InvalidOperation(
            f"duration_seconds must be -1 (unknown) or 0 to {MAX_DURATION} (7 days)"
        )


def plan_request(
    request: OperationRequest,
    topology: Topology,
    is_deleted: Callable[[str], bool],
    min_notice: Callable[[OperationSpec, list[VM]], float],
    *,
    time_scale: float = 1.0,
) -> Plan:
    """Validate ``request`` and split its VMs into batches; raises a FabricError subclass.

    ``min_notice`` gives the least notice in the server's clock (already scaled);
    ``time_scale`` scales the longest notice the same way.
    """
    try:
        spec = spec_for(request.kind)
    except ValueError as exc:
        raise InvalidOperation(str(exc)) from None
    vms, rolling = _resolve(request, topology, is_deleted)
    _check_target(spec, request)
    _check_spec(spec, vms, topology)
    _check_overrides(request, spec, min_notice(spec, vms), time_scale)
    if not rolling:
        return Plan(request, spec, (tuple(vm.name for vm in vms),))
    by_domain: dict[int, list[str]] = {}
    for vm in sorted(vms, key=lambda v: v.update_domain):
        by_domain.setdefault(vm.update_domain, []).append(vm.name)
    return Plan(request, spec, tuple(tuple(names) for names in by_domain.values()))
