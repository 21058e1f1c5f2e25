"""The report's pictures as geometry: a timeline per event and latency histograms.

Everything is computed here (positions in SVG user units); the template only draws
shapes at the coordinates it is given. Time runs on a logarithmic axis from the event's
creation: reactions take seconds while a notice lasts minutes or days, and on a linear
axis every sighting would sit on top of the creation line.
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left
from dataclasses import dataclass, field

from forewarn.rehearsal.verdicts import EventVerdict, LatencyStats, VmVerdict

__all__ = ["Histogram", "Timeline", "duration", "histogram", "timeline"]

WIDTH = 760
LABEL = 150  # left margin for lane labels
RIGHT = 24
LANE = 18
TOP = 46
AXIS = 30
#: Most VM lanes drawn per event (the table below lists them all).
MAX_LANES = 24

_TICKS = (0, 1, 2, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 86400,
          172800, 259200, 604800)  # fmt: skip
_BINS = (0, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 900, 1800, 3600, 86400)

_SEVERITY = {"missed": 0, "unlisted": 1, "waiting": 2, "unseen": 3, "detected": 4,
             "created-started": 5, "approved": 6}  # fmt: skip


def duration(seconds: float) -> str:
    """A short human duration: 0.4 s, 12 s, 15 min, 3 d."""
    if seconds < 10:
        return f"{seconds:.1f} s" if seconds % 1 else f"{seconds:.0f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} d"


@dataclass
class Mark:
    """One shape on a lane: ``kind`` is seen, seen-started, approved, missed, poll."""

    kind: str
    x: float
    y: float
    title: str


@dataclass
class Rule:
    """A vertical line across every lane (created, NotBefore, started, removed);
    ``label_y``: where its label sits (labels that would overlap are stacked)."""

    kind: str
    x: float
    label: str
    title: str
    label_y: float = 12


@dataclass
class Lane:
    """One VM's row."""

    label: str
    verdict: str
    y: float
    marks: list[Mark] = field(default_factory=list)


@dataclass
class Tick:
    x: float
    label: str


@dataclass
class Timeline:
    """One event's timeline: rules, lanes of marks, and the time axis."""

    width: int
    height: int
    plot_left: int
    plot_right: int
    axis_y: float
    rules: list[Rule]
    lanes: list[Lane]
    ticks: list[Tick]
    hidden: int


class _Axis:
    """Seconds after creation to x, on log10(1 + s)."""

    def __init__(self, span: float) -> None:
        self.top = math.log10(1 + max(span, 1.0))
        self.left = LABEL
        self.right = WIDTH - RIGHT

    def x(self, seconds: float) -> float:
        fraction = math.log10(1 + max(0.0, seconds)) / self.top
        return round(self.left + min(1.0, fraction) * (self.right - self.left), 1)


def timeline(event: EventVerdict, now: float) -> Timeline | None:
    """The event's timeline, or None when its creation time is unknown."""
    created = event.created_at
    if created is None:
        return None
    moments = [t for t in (event.not_before, event.started_at, event.ended_at) if t is not None]
    for vm in event.vms:
        moments += [t for t in (vm.first_seen, vm.seen_started, vm.approved_at) if t is not None]
    end = max([*moments, min(now, event.not_before or now)], default=now)
    axis = _Axis((end - created) * 1.15)
    rules = [Rule("created", axis.x(0), "created", f"created at {_utc(created)}")]
    if event.not_before is not None:
        rules.append(
            Rule("not-before", axis.x(event.not_before - created), "NotBefore",
                 f"NotBefore {_utc(event.not_before)} ({duration(event.notice or 0)} notice)")
        )  # fmt: skip
    if event.started_at is not None:
        why = f" ({event.start_reason})" if event.start_reason else ""
        rules.append(
            Rule("started", axis.x(event.started_at - created), "Started",
                 f"Started at {_utc(event.started_at)}{why}")
        )  # fmt: skip
    if event.ended_at is not None:
        rules.append(
            Rule("removed", axis.x(event.ended_at - created), event.status,
                 f"{event.status} at {_utc(event.ended_at)}")
        )  # fmt: skip
    _stack(rules)
    ordered = sorted(event.vms, key=lambda v: (_SEVERITY.get(v.verdict, 9), v.vm))
    shown = ordered[:MAX_LANES]
    lanes = [_lane(event, vm, axis, TOP + (i + 1) * LANE) for i, vm in enumerate(shown)]
    operator = _operator_lane(event, axis)
    lanes.insert(0, operator)
    axis_y = TOP + (len(lanes)) * LANE + 6
    span = (end - created) * 1.15
    ticks = [Tick(axis.x(t), duration(t) if t else "0") for t in _TICKS if t <= span]
    return Timeline(
        width=WIDTH,
        height=int(axis_y + AXIS),
        plot_left=axis.left,
        plot_right=axis.right,
        axis_y=axis_y,
        rules=rules,
        lanes=lanes,
        ticks=_spaced(ticks),
        hidden=len(ordered) - len(shown),
    )


def _stack(rules: list[Rule], gap: float = 64) -> None:
    """Put each rule's label on the first of three rows where it overlaps no other."""
    placed: list[list[float]] = [[], [], []]
    for rule in sorted(rules, key=lambda r: r.x):
        row = next((i for i, xs in enumerate(placed) if all(abs(rule.x - x) >= gap for x in xs)), 0)
        placed[row].append(rule.x)
        rule.label_y = 12 + 11 * row


def _spaced(ticks: list[Tick], gap: float = 44) -> list[Tick]:
    """Ticks whose labels would overlap are dropped (the later one goes)."""
    out: list[Tick] = []
    for tick in ticks:
        if not out or tick.x - out[-1].x >= gap:
            out.append(tick)
    return out


def _operator_lane(event: EventVerdict, axis: _Axis) -> Lane:
    """The event's own row: the first approval (whoever gave it)."""
    lane = Lane("event", "event", TOP)
    created = event.created_at or 0.0
    if event.approved_at is not None:
        who = "the operator" if event.approved_by == "control" else event.approved_by
        lane.marks.append(
            Mark("approved", axis.x(event.approved_at - created), TOP,
                 f"approved by {who} at {_utc(event.approved_at)}")
        )  # fmt: skip
    return lane


def _lane(event: EventVerdict, vm: VmVerdict, axis: _Axis, y: float) -> Lane:
    created = event.created_at or 0.0
    lane = Lane(vm.vm, vm.verdict, y)
    before = vm.last_poll_before_start
    if before is not None and before >= created:
        lane.marks.append(
            Mark("poll", axis.x(before - created), y,
                 f"{vm.vm}: last poll before the start, {duration(before - created)} in")
        )  # fmt: skip
    if vm.first_seen is not None:
        lane.marks.append(
            Mark("seen", axis.x(vm.first_seen - created), y,
                 f"{vm.vm} saw it after {duration(max(0.0, vm.first_seen - created))}")
        )  # fmt: skip
    elif vm.seen_started is not None:
        lane.marks.append(
            Mark("seen-started", axis.x(vm.seen_started - created), y,
                 f"{vm.vm} first saw it Started, {duration(vm.seen_started - created)} in")
        )  # fmt: skip
    if vm.approved_at is not None:
        lane.marks.append(
            Mark("approved", axis.x(vm.approved_at - created), y,
                 f"{vm.vm} approved it after {duration(max(0.0, vm.approved_at - created))}")
        )  # fmt: skip
    if vm.verdict == "missed" and event.started_at is not None:
        lane.marks.append(
            Mark("missed", axis.x(event.started_at - created), y, f"{vm.vm}: {vm.note}")
        )
    return lane


@dataclass
class Bar:
    x: float
    width: float
    y: float
    height: float
    count: int
    title: str


@dataclass
class Histogram:
    """Counts per latency bin (bins get wider as latencies grow)."""

    width: int
    height: int
    bars: list[Bar]
    labels: list[Tick]
    base_y: float
    markers: list[Rule]
    empty: bool


def histogram(stats: LatencyStats, width: int = 370, height: int = 170) -> Histogram:
    """Bars of ``stats.values`` (sorted) over nice bins, with the median and p90 marked."""
    left, right, top, bottom = 12, 12, 14, 34
    base_y = height - bottom
    if not stats.values:
        return Histogram(width, height, [], [], base_y, [], True)
    largest = stats.values[-1]
    first = max((e for e in _BINS if e <= stats.values[0]), default=0)
    edges = [e for e in _BINS if first <= e <= largest]
    edges.append(next((e for e in _BINS if e > largest), largest * 1.5 + 1))
    # the values are sorted (``verdicts.stats``): a bin's count is where its upper edge
    # falls among them, a search a bin rather than a pass over a million VMs' values
    below = [bisect_left(stats.values, edge) for edge in edges[1:-1]]
    bounds = [0, *below, len(stats.values)]
    counts = [bounds[i + 1] - bounds[i] for i in range(len(edges) - 1)]
    slot = (width - left - right) / len(counts)
    tallest = max(counts)
    bars = []
    labels = []
    for i, count in enumerate(counts):
        bar_height = (base_y - top) * count / tallest
        x = left + i * slot
        span = f"{duration(edges[i])} to {duration(edges[i + 1])}"
        bars.append(Bar(round(x + 2, 1), round(slot - 4, 1), round(base_y - bar_height, 1),
                        round(bar_height, 1), count, f"{count} between {span}"))  # fmt: skip
        labels.append(Tick(round(x, 1), duration(edges[i])))
    labels.append(Tick(round(left + len(counts) * slot, 1), duration(edges[-1])))

    def position(value: float) -> float:
        i = next(i for i in range(len(counts)) if value < edges[i + 1] or i == len(counts) - 1)
        within = (value - edges[i]) / ((edges[i + 1] - edges[i]) or 1)
        return round(left + (i + min(1.0, within)) * slot, 1)

    markers = []
    if stats.median is not None:
        markers.append(Rule("median", position(stats.median), "median",
                            f"median {duration(stats.median)}"))  # fmt: skip
    if stats.p90 is not None:
        markers.append(Rule("p90", position(stats.p90), "p90", f"90th percentile "
                            f"{duration(stats.p90)}"))  # fmt: skip
    return Histogram(width, height, bars, _spaced(labels, 30), base_y, markers, False)


def _utc(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))
