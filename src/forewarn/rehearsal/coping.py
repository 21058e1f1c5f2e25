"""How each VM coped with injected endpoint faults: kept polling, backed off, missed.

The endpoint tells the reaction tracker of every request a fault answered
(``ReactionTracker.faulted``); this turns those tallies, each VM's last request and the
events it missed into one line per faulted VM of the report. Kept in memory only, like
the faults themselves (``imds/faults.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import msgspec

__all__ = ["FaultTally", "MissedEvent", "VmCoping", "coping"]


@dataclass(slots=True)
class FaultTally:
    """The faulted requests of one VM: how many of each kind, first and last (platform)."""

    first: float
    last: float
    kinds: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, at: float) -> None:
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        self.last = max(self.last, at)


@dataclass(frozen=True, slots=True)
class MissedEvent:
    """An event a VM missed, with the window in which it could have seen it."""

    vm: str
    event_id: str
    created_at: float | None
    started_at: float | None


class VmCoping(msgspec.Struct, kw_only=True):
    """One VM under faults. ``interval``: mean seconds between its faulted requests (a
    client that backs off spaces them out); ``polled_after``: seconds from its last
    faulted request to its last request (None: it never asked again); ``missed``: events
    it missed whose notice overlapped its faults."""

    vm: str
    faulted: dict[str, int]
    requests: int
    first_faulted: float
    last_faulted: float
    interval: float | None
    last_poll: float | None
    polled_after: float | None
    kept_polling: bool
    missed: list[str]
    note: str


def _overlaps(event: MissedEvent, tally: FaultTally) -> bool:
    start = event.created_at if event.created_at is not None else -float("inf")
    end = event.started_at if event.started_at is not None else float("inf")
    return start <= tally.last and tally.first <= end


def coping(
    tallies: Mapping[str, FaultTally],
    last_requests: Mapping[str, float],
    missed: Iterable[MissedEvent],
) -> list[VmCoping]:
    """One verdict per VM that met a fault, by name."""
    missed_by_vm: dict[str, list[MissedEvent]] = {}
    for event in missed:
        missed_by_vm.setdefault(event.vm, []).append(event)
    out = []
    for vm in sorted(tallies):
        tally = tallies[vm]
        requests = sum(tally.kinds.values())
        span = tally.last - tally.first
        interval = span / (requests - 1) if requests > 1 else None
        last_poll = last_requests.get(vm)
        # A frozen virtual clock puts both at one instant: a request then counts as after.
        after = None if last_poll is None or last_poll < tally.last else last_poll - tally.last
        lost = [e.event_id for e in missed_by_vm.get(vm, []) if _overlaps(e, tally)]
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(tally.kinds.items()))
        line = f"{requests} faulted requests ({kinds})"
        if interval is not None:
            line += f", one every {interval:.1f} s"
        line += "; asked again after" if after is not None else "; never asked again"
        if after is not None:
            line += f" {after:.1f} s"
        if lost:
            line += f"; missed {len(lost)} event(s) announced meanwhile"
        out.append(
            VmCoping(
                vm=vm, faulted=dict(tally.kinds), requests=requests, first_faulted=tally.first,
                last_faulted=tally.last, interval=interval, last_poll=last_poll,
                polled_after=after, kept_polling=after is not None, missed=lost, note=line,
            )
        )  # fmt: skip
    return out
