"""How each VM coped with injected endpoint faults: kept polling, backed off, missed.

The endpoint tells the reaction tracker of every request a fault answered
(``ReactionTracker.faulted``); this turns those tallies, each VM's last request and the
events it missed into one line per faulted VM of the report. Kept in memory only, like
the faults themselves (``imds/faults.py``).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import msgspec

__all__ = ["ANSWERING_KINDS", "FaultTally", "MissedEvent", "VmCoping", "coping", "kinds_text"]

#: Fault kinds that answer a request in the platform's stead (a latency fault only delays
#: the right answer): a request they took never reached the platform.
ANSWERING_KINDS = frozenset({"status", "timeout", "reset", "cotenant"})
#: The faulted requests a tally keeps the time of, per VM; past it the older half is
#: folded into the counts (a report since a time before the kept ones counts them all).
KEPT_TIMES = 50_000
_KINDS = ("status", "latency", "timeout", "reset", "cotenant")
_CODE = {kind: i for i, kind in enumerate(_KINDS)}


def _times() -> array[float]:
    return array("d")


@dataclass(slots=True)
class FaultTally:
    """The faulted requests of one VM: how many of each kind, first and last (platform),
    and the time and kind of each (up to ``KEPT_TIMES``), so that a report since a time
    (``forewarn report --since``: the drill after a reset) counts only its own."""

    first: float
    last: float
    kinds: dict[str, int] = field(default_factory=dict)
    times: array[float] = field(default_factory=_times)
    codes: bytearray = field(default_factory=bytearray)

    def add(self, kind: str, at: float) -> None:
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        self.last = max(self.last, at)
        code = _CODE.get(kind)
        if code is None:
            return
        if len(self.times) >= KEPT_TIMES:  # fold the older half: counts stay exact
            half = KEPT_TIMES // 2
            del self.times[:half]
            del self.codes[:half]
        self.times.append(at)
        self.codes.append(code)

    def window(self, since: float | None) -> FaultTally | None:
        """A copy holding only the requests at or after ``since`` (None: all); None when
        there are none. A ``since`` before the kept times counts every request."""
        times = self.times
        if since is None or not times or since <= times[0]:
            if since is not None and self.last < since:
                return None
            return FaultTally(self.first, self.last, dict(self.kinds), array("d", times),
                              bytearray(self.codes))  # fmt: skip
        start = bisect_left(times, since)
        if start == len(times):
            return None
        kept, codes = array("d", times[start:]), self.codes[start:]
        kinds: dict[str, int] = {}
        for code in codes:
            kinds[_KINDS[code]] = kinds.get(_KINDS[code], 0) + 1
        return FaultTally(kept[0], kept[-1], kinds, kept, codes)

    def answered(self, start: float | None, end: float | None) -> dict[str, int]:
        """Requests a fault answered (``ANSWERING_KINDS``) from ``start`` to ``end``
        (None: unbounded), per kind."""
        low = -float("inf") if start is None else start
        high = float("inf") if end is None else end
        times = self.times
        if not times:  # counts only: the whole tally, if it overlaps at all
            if self.last < low or self.first > high:
                return {}
            return {k: n for k, n in self.kinds.items() if k in ANSWERING_KINDS}
        out: dict[str, int] = {}
        for code in self.codes[bisect_left(times, low) : bisect_right(times, high)]:
            kind = _KINDS[code]
            if kind in ANSWERING_KINDS:
                out[kind] = out.get(kind, 0) + 1
        return out

    def last_answered(self) -> float | None:
        """The last request a fault answered (not just delayed); None: none."""
        if not self.times:
            return self.last if any(k in ANSWERING_KINDS for k in self.kinds) else None
        latency = _CODE["latency"]
        for i in range(len(self.codes) - 1, -1, -1):
            if self.codes[i] != latency:
                return self.times[i]
        return None


def kinds_text(kinds: Mapping[str, int]) -> str:
    """``12 status, 1 reset``."""
    return ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))


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
        # The verdict first (a terminal's first columns), then the counts behind it.
        line = "never asked again" if after is None else f"asked again after {after:.1f} s"
        if lost:
            shown = ", ".join(e[:8] for e in lost[:3]) + (" ..." if len(lost) > 3 else "")
            line += f", missed {len(lost)} event(s) announced meanwhile ({shown})"
        line += f"; {requests} faulted requests ({kinds_text(tally.kinds)})"
        if interval is not None:
            line += f", one every {interval:.1f} s"
        out.append(
            VmCoping(
                vm=vm, faulted=dict(tally.kinds), requests=requests, first_faulted=tally.first,
                last_faulted=tally.last, interval=interval, last_poll=last_poll,
                polled_after=after, kept_polling=after is not None, missed=lost, note=line,
            )
        )  # fmt: skip
    return out
