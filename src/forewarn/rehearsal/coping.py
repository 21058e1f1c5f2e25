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

__all__ = [
    "ANSWERING_KINDS",
    "FaultTally",
    "MissedEvent",
    "Segment",
    "VmCoping",
    "coping",
    "kinds_text",
]

#: Fault kinds that answer a request in the platform's stead (a latency fault only delays
#: the right answer): a request they took never reached the platform.
ANSWERING_KINDS = frozenset({"status", "timeout", "reset", "cotenant"})
#: Faulted requests a tally keeps the time of, per VM: past it they are sealed as one
#: segment of counts (first, last, per kind), some 1 byte a request instead of 9; a
#: reset seals them too (``ReactionTracker``), so a report since a reset is exact.
KEPT_TIMES = 256
_KINDS = ("status", "latency", "timeout", "reset", "cotenant")
_CODE = {kind: i for i, kind in enumerate(_KINDS)}


def _times() -> array[float]:
    return array("d")


def _counts(codes: Iterable[int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for code in codes:
        out[_KINDS[code]] = out.get(_KINDS[code], 0) + 1
    return out


def _answered(
    times: array[float], codes: bytes | bytearray, low: float, high: float
) -> dict[str, int]:
    """Of requests kept one by one, those a fault answered from ``low`` to ``high``."""
    out: dict[str, int] = {}
    for code in codes[bisect_left(times, low) : bisect_right(times, high)]:
        kind = _KINDS[code]
        if kind in ANSWERING_KINDS:
            out[kind] = out.get(kind, 0) + 1
    return out


@dataclass(frozen=True, slots=True)
class Segment:
    """Sealed faulted requests of one VM: how many of each kind, from first to last; with
    the time and kind of each when sealed at a reset (``times``, ``codes``)."""

    first: float
    last: float
    kinds: dict[str, int]
    times: array[float] | None = None
    codes: bytes | None = None

    def answered(self, low: float, high: float) -> dict[str, int]:
        """Its requests a fault answered from ``low`` to ``high``, per kind (without
        their times, a part of the segment: its share of the counts, at least one)."""
        if self.last < low or self.first > high:
            return {}
        if self.times is not None and self.codes is not None:
            return _answered(self.times, self.codes, low, high)
        span = self.last - self.first
        inside = min(high, self.last) - max(low, self.first)
        share = 1.0 if span <= 0 or inside >= span else inside / span
        return {k: max(1, round(n * share)) for k, n in self.kinds.items()
                if k in ANSWERING_KINDS}  # fmt: skip


@dataclass(slots=True)
class FaultTally:
    """The faulted requests of one VM: how many of each kind, first and last (platform);
    the time and kind of each of the latest (``times``, ``codes``: up to ``KEPT_TIMES``)
    and, before them, sealed segments of counts; so that a report since a time (``forewarn
    report --since``: the drill after a reset) counts only its own. A tally made of counts
    alone (no times, no segment) is one segment."""

    first: float
    last: float
    kinds: dict[str, int] = field(default_factory=dict)
    times: array[float] = field(default_factory=_times)
    codes: bytearray = field(default_factory=bytearray)
    sealed: list[Segment] = field(default_factory=list)

    def add(self, kind: str, at: float) -> None:
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        self.last = max(self.last, at)
        code = _CODE.get(kind)
        if code is None:
            return
        self.times.append(at)
        self.codes.append(code)
        if len(self.times) >= KEPT_TIMES:
            self.seal()

    def seal(self, *, keep_times: bool = False) -> None:
        """Seal the requests kept one by one into a segment: past ``KEPT_TIMES`` as counts,
        at a reset (``keep_times``) with their times, so that a drill's requests never
        share a segment with the next one's and its verdict reads the same after."""
        if self.times:
            times, codes = (self.times, bytes(self.codes)) if keep_times else (None, None)
            self.sealed.append(
                Segment(self.times[0], self.times[-1], _counts(self.codes), times, codes)
            )
            self.times, self.codes = array("d"), bytearray()

    def segments(self) -> list[Segment]:
        if not self.sealed and not self.times and self.kinds:
            return [Segment(self.first, self.last, dict(self.kinds))]
        return self.sealed

    def window(self, since: float | None) -> FaultTally | None:
        """A copy holding only the requests at or after ``since`` (None: all; a segment
        of counts across ``since`` counts whole); None when there are none."""
        low = -float("inf") if since is None else since
        segments: list[Segment] = []
        for seg in self.segments():
            if seg.last < low:
                continue
            if seg.first >= low or seg.times is None or seg.codes is None:
                segments.append(seg)
                continue
            at = bisect_left(seg.times, low)  # it has its times: cut it exactly
            cut_times, cut_codes = array("d", seg.times[at:]), seg.codes[at:]
            segments.append(
                Segment(cut_times[0], cut_times[-1], _counts(cut_codes), cut_times, cut_codes)
            )
        start = bisect_left(self.times, low)
        kept, codes = array("d", self.times[start:]), self.codes[start:]
        if not segments and not kept:
            return None
        kinds = _counts(codes)
        for seg in segments:
            for kind, n in seg.kinds.items():
                kinds[kind] = kinds.get(kind, 0) + n
        first = segments[0].first if segments else kept[0]
        last = kept[-1] if kept else segments[-1].last
        return FaultTally(first, last, kinds, kept, codes, segments)

    def answered(self, start: float | None, end: float | None) -> dict[str, int]:
        """Requests a fault answered (``ANSWERING_KINDS``) from ``start`` to ``end``
        (None: unbounded), per kind."""
        low = -float("inf") if start is None else start
        high = float("inf") if end is None else end
        out = _answered(self.times, self.codes, low, high)
        for seg in self.segments():
            for kind, n in seg.answered(low, high).items():
                out[kind] = out.get(kind, 0) + n
        return out

    def last_answered(self) -> float | None:
        """The last request a fault answered (not just delayed); None: none."""
        latency = _CODE["latency"]
        for i in range(len(self.codes) - 1, -1, -1):
            if self.codes[i] != latency:
                return self.times[i]
        for seg in reversed(self.segments()):
            if seg.times is not None and seg.codes is not None:
                exact = [t for t, c in zip(seg.times, seg.codes, strict=True) if c != latency]
                if exact:
                    return exact[-1]
            elif any(k in ANSWERING_KINDS for k in seg.kinds):
                return seg.last
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
