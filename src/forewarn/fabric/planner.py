"""From an operation request to the VMs it touches, validated.

A request names VMs, a host, a scope, or the region (the whole fleet). A scope target is
platform maintenance that walks the scope's update domains one batch at a time (a
rollout); the region walks every scope's, update domain by update domain and host by
host, in waves of a bounded number of hosts (``fleet.walk``). Only the operations that
Azure rolls out that way take either. User operations name VMs (the user asks for an instance,
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
from forewarn.fleet.walk import Cursor, UpdateDomainWalk

__all__ = [
    "DEFAULT_WAVE_HOSTS",
    "MAX_WAVE_HOSTS",
    "OperationRequest",
    "Plan",
    "RegionStart",
    "group_key",
    "next_live_wave",
    "plan_request",
]

DAY = 24 * 3600.0
MAX_NOTICE = 7 * DAY
#: Platform maintenance that walks a scope's update domains (the only scope targets).
ROLLING_KINDS = frozenset(
    {OperationKind.HOST_UPDATE, OperationKind.PLATFORM_REBOOT, OperationKind.PLATFORM_REDEPLOY}
)
#: The longest interruption an event can announce (DurationInSeconds).
MAX_DURATION = 7 * 24 * 3600
#: Hosts a wave of a region rollout updates at once, unless the request says otherwise.
DEFAULT_WAVE_HOSTS = 100
MAX_WAVE_HOSTS = 10_000


@dataclass(frozen=True, slots=True)
class OperationRequest:
    """What a user, the control API or a scenario asks the platform to do.

    Exactly one of ``vms``, ``host``, ``scope`` and ``region`` names the target (a region
    rollout takes ``wave_hosts``: hosts a wave updates at once). ``notice_seconds``,
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
    region: bool = False
    wave_hosts: int | None = None

    @property
    def target(self) -> str:
        """A short human description of the target, for listings and history."""
        if self.region:
            return "region"
        if self.host is not None:
            return f"host {self.host}"
        if self.scope is not None:
            return f"scope {self.scope}"
        return "vm " + ",".join(self.vms)


@dataclass(frozen=True, slots=True)
class RegionStart:
    """Where a region rollout stands once its first wave is made: the cursor of the next
    wave, how many waves the first live one took (waves of deleted VMs only are
    skipped), how many waves the walk has, of how many hosts."""

    cursor: Cursor | None
    begun: int
    waves: int
    wave_hosts: int
    fleet_vms: int
    update_domain: int


@dataclass(frozen=True, slots=True)
class Plan:
    """A validated request: its spec and the batches of VMs (one batch unless rolling;
    a region rollout's first wave only, the rest in ``region``)."""

    request: OperationRequest
    spec: OperationSpec
    batches: tuple[tuple[str, ...], ...]
    region: RegionStart | None = None

    @property
    def rolling(self) -> bool:
        """True when the work walks update domains."""
        return self.request.scope is not None or self.request.region


def group_key(vm: VM) -> tuple[str, str, int]:
    """VMs share an event only when they share scope, host and update domain."""
    return (vm.scope_id, vm.host, vm.update_domain)


def _live(vms: Iterable[VM], is_deleted: Callable[[str], bool]) -> list[VM]:
    return [vm for vm in vms if not is_deleted(vm.name)]


def _resolve(
    request: OperationRequest, topology: Topology, is_deleted: Callable[[str], bool]
) -> tuple[list[VM], bool]:
    named = [request.vms != (), request.host is not None, request.scope is not None,
             request.region]  # fmt: skip
    if sum(named) != 1:
        raise InvalidOperation("name exactly one target: VMs, a host, a scope, or the region")
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


def _rolling_kinds() -> str:
    *others, last = (k.value for k in OperationKind if k in ROLLING_KINDS)
    return f"{', '.join(others)} and {last}"


def _check_region(spec: OperationSpec, request: OperationRequest) -> None:
    """A region target takes only the rolling kinds; ``wave_hosts`` only a region."""
    kind = spec.kind.value
    hosts = request.wave_hosts
    if not request.region:
        if hosts is not None:
            raise InvalidOperation("wave_hosts is only for a region rollout (region: true)")
        return
    if spec.kind not in ROLLING_KINDS:
        raise InvalidOperation(
            f"{kind} does not roll out over a region; only {_rolling_kinds()} walk the "
            "region's update domains (name a VM or a host for the others)"
        )
    if hosts is not None and not 1 <= hosts <= MAX_WAVE_HOSTS:
        raise InvalidOperation(f"wave_hosts must be 1 to {MAX_WAVE_HOSTS:,}, got {hosts}")


def next_live_wave(
    walk: UpdateDomainWalk,
    cursor: Cursor | None,
    hosts: int,
    name_at: Callable[[int], str],
    is_deleted: Callable[[str], bool],
) -> tuple[tuple[str, ...], int, int, Cursor | None]:
    """From ``cursor`` on, the first wave with a live VM: its live VMs' names, how many
    waves that took (skipped ones included), its update domain, and the cursor after it.
    No names: every wave left was of deleted VMs only (then the cursor is None)."""
    taken = 0
    while cursor is not None:
        domain = cursor[0]
        positions, cursor = walk.wave(cursor, hosts)
        taken += 1
        names = tuple(n for n in map(name_at, positions) if not is_deleted(n))
        if names:
            return names, taken, domain, cursor
    return (), taken, -1, None


def _plan_region(
    request: OperationRequest,
    spec: OperationSpec,
    topology: Topology,
    is_deleted: Callable[[str], bool],
) -> Plan:
    walk = topology.update_domain_walk()
    hosts = request.wave_hosts or DEFAULT_WAVE_HOSTS
    names, begun, domain, cursor = next_live_wave(
        walk, walk.start(), hosts, topology.vms.name_at, is_deleted
    )
    if not names:
        raise InvalidOperation("the region has no live VM")
    start = RegionStart(cursor, begun, walk.waves(hosts), hosts, len(topology.vms), domain)
    return Plan(request, spec, (names,), start)


def _check_target(spec: OperationSpec, request: OperationRequest) -> None:
    """Which kinds of target an operation takes (the README's operations table)."""
    kind = spec.kind.value
    if spec.user_initiated and request.region:
        raise InvalidOperation(f"{kind} is a user operation; name a VM, not the region")
    if spec.user_initiated and request.scope is not None:
        raise InvalidOperation(f"{kind} is a user operation; name a VM, not a scope")
    if spec.user_initiated and request.host is not None:
        raise InvalidOperation(f"{kind} is a user operation; name a VM, not a host")
    if request.scope is not None and spec.kind not in ROLLING_KINDS:
        raise InvalidOperation(
            f"{kind} concerns a VM or the VMs of a host, not a whole scope; name a VM or a "
            f"host (only {_rolling_kinds()} walk a scope's update domains)"
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
    if request.region:  # the fleet, never listed: the walk gives its first wave
        if request.vms or request.host is not None or request.scope is not None:
            raise InvalidOperation("name exactly one target: VMs, a host, a scope, or the region")
        _check_target(spec, request)
        _check_region(spec, request)
        _check_overrides(request, spec, min_notice(spec, []), time_scale)
        return _plan_region(request, spec, topology, is_deleted)
    _check_region(spec, request)
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
