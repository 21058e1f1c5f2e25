"""Maintenance weather: seeded random operations at given rates, for soak tests.

A rate is a mean number of arrivals per host of one operation (``live-migration: 2/h``:
each host gets live migrations at random times, twice an hour on average); ``hosts:`` sets
other rates for some hosts. Each (operation, host) pair draws from a random stream of its
own, seeded from the seed, the operation and the host, so the same seed on the same fleet
gives the same operations at the same times (relative to the start), and adding a rate or
a host never moves the arrivals of the others.

Where an operation lands on a host: live migration and hardware operations take the host
(every VM on it); user operations and scale-in take one VM of the host (a scale-set VM for
scale-in), Spot eviction one of its Spot VMs; a host without such a VM gets none.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping
from dataclasses import dataclass

from forewarn.contract.durations import format_duration, parse_duration, parse_rate
from forewarn.fabric.catalogue import OperationKind
from forewarn.scenarios.fleetview import FleetView, VmInfo

__all__ = ["Arrival", "Weather", "arrivals", "parse_weather"]

#: At most this many arrivals per run: a typo in a rate must not plan a million calls.
MAX_ARRIVALS = 100_000

_HOST_KINDS = frozenset({
    OperationKind.LIVE_MIGRATION, OperationKind.HOST_UPDATE, OperationKind.PLATFORM_REBOOT,
    OperationKind.PLATFORM_REDEPLOY, OperationKind.DEGRADED_HARDWARE,
    OperationKind.HARDWARE_FAILURE,
})  # fmt: skip


@dataclass(frozen=True, slots=True)
class Weather:
    """Rates in arrivals per second per host; times in platform seconds."""

    seed: int
    duration: float
    rates: dict[str, float]
    hosts: dict[str, dict[str, float]]
    at: float = 0.0

    def describe(self) -> str:
        rates = ", ".join(f"{k} {r * 3600:g}/h" for k, r in sorted(self.rates.items()))
        return f"weather (seed {self.seed}, {format_duration(self.duration)}): {rates}"


@dataclass(frozen=True, slots=True)
class Arrival:
    """One operation the weather brings: when (from its start), what, on what."""

    at: float
    kind: str
    target: str
    host: str


def _kind(name: str, where: str) -> str:
    try:
        return OperationKind(name).value
    except ValueError:
        known = ", ".join(k.value for k in OperationKind)
        raise ValueError(f"{where}: unknown operation {name!r}; known: {known}") from None


def parse_weather(
    *,
    seed: int,
    duration: object,
    rates: Mapping[str, object],
    hosts: Mapping[str, Mapping[str, object]] | None,
    at: object,
) -> Weather:
    """Check and convert the fields of a ``weather:`` block, as written in a scenario
    file (ValueError names what is wrong)."""
    per_kind = {_kind(k, "rates"): parse_rate(v, f"rate of {k}") for k, v in rates.items()}
    per_host = {
        host: {
            _kind(k, f"hosts.{host}"): parse_rate(v, f"rate of {k} on {host}")
            for k, v in own.items()
        }
        for host, own in (hosts or {}).items()
    }
    return Weather(
        seed=seed,
        duration=parse_duration(duration, "weather duration"),
        rates=per_kind,
        hosts=per_host,
        at=parse_duration(at, "weather at"),
    )


def _stream(seed: int, kind: str, host: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}\0{kind}\0{host}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _candidates(kind: str, vms: list[VmInfo], fleet: FleetView) -> list[str]:
    """What an arrival of ``kind`` on a host with ``vms`` may target (empty: none)."""
    if OperationKind(kind) in _HOST_KINDS:
        return [vms[0].host]
    if kind == OperationKind.SPOT_EVICTION:
        return [vm.name for vm in vms if vm.spot]
    if kind == OperationKind.SCALE_IN:
        return [vm.name for vm in vms if fleet.scopes[vm.scope].kind == "scale_set"]
    return [vm.name for vm in vms]


def arrivals(weather: Weather, fleet: FleetView) -> list[Arrival]:
    """Every arrival during the weather, in time order (ties: operation, then host)."""
    out: list[Arrival] = []
    for host, vms in fleet.hosts().items():
        rates = {**weather.rates, **weather.hosts.get(host, {})}
        for kind in sorted(rates):
            rate = rates[kind]
            targets = _candidates(kind, vms, fleet)
            if rate <= 0 or not targets:
                continue
            stream = _stream(weather.seed, kind, host)
            t = stream.expovariate(rate)
            while t < weather.duration:
                out.append(Arrival(t, kind, stream.choice(targets), host))
                if len(out) > MAX_ARRIVALS:
                    raise ValueError(
                        f"the weather brings more than {MAX_ARRIVALS} operations; lower its rates"
                    )
                t += stream.expovariate(rate)
    out.sort(key=lambda a: (a.at, a.kind, a.host))
    return out
