"""The last verdict graded, handed out again while nothing it was graded from moved.

Grading is linear in the VMs that had an event: after a platform update rolled over a
region of a million VMs, about a minute. The dashboard asks after every change and every
10 s, ``report --html`` asks twice (the verdict and the page), a user reads ``report``
then ``--json``: on a still clock with no fact written since, every one of them is the
same verdict. ``VerdictMemo`` keeps it, keyed by all it was graded from (``VerdictKey``:
the window, the instant, the store's count of fact writes by every front-end, the
deleted VMs, the fleet), and grades anew when any of it moved.

Only the tracker's thread reads and writes it, one grading at a time: requests that come
while a verdict is graded wait for it and take it. One verdict is kept, and only for
``KEEP_SECONDS`` after it was last asked for (``forget_idle``; on that thread too, and in
pieces: freed at once, on any thread, a million VMs' verdict holds the interpreter's lock
and so the event loop for a second or more); the old one is let go before
the next is graded, so at most one is ever held, but while a reader pages through one
by its id (``pinned``): then that one and the latest. A kept verdict is frozen out of the
collector's passes (``gc.freeze``): walking it would hold the interpreter for seconds.
"""

from __future__ import annotations

import gc
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from forewarn.rehearsal.grading import ReactionReport

__all__ = ["KEEP_SECONDS", "VerdictKey", "VerdictMemo", "VerdictMetrics"]

#: How long a verdict is kept after it was last asked for (the dashboard asks every 10 s).
KEEP_SECONDS = 30.0


@dataclass(frozen=True, eq=False)
class VerdictKey:
    """Everything a verdict was graded from, but the facts themselves (their count of
    writes stands for them): two requests with an equal key get the same verdict."""

    since: float | None
    stale_after: float
    now: float
    writes: int
    deleted: frozenset[str]
    #: The fleet the scopes were looked up in (compared by identity: a new fleet, anew).
    fleet: object

    def same(self, other: VerdictKey) -> bool:
        """Whether ``other`` was graded from the same facts, fleet and instant."""
        return (
            (self.since, self.stale_after, self.now, self.writes)
            == (other.since, other.stale_after, other.now, other.writes)
            and self.fleet is other.fleet
            and self.deleted == other.deleted
        )


@dataclass(eq=False)
class _Kept:
    """A verdict kept: what it was graded from, its id, when it was last asked for."""

    key: VerdictKey
    report: ReactionReport
    id: str
    used: float


class VerdictMemo:
    """The graded verdict and its key (used on the tracker's thread only), and the one a
    reader pages through by its id while others are graded after it.

    Every verdict kept has an id (the ``Forewarn-Verdict`` header of its answers): a
    reader that owes many requests to one verdict (``report --junit`` reading every scope
    a page at a time, ``report --html`` beside the terminal's) names it with
    ``verdict=ID`` and gets that very verdict, not another graded in between: with a
    real clock the instant always moves, and every request would grade again (a minute
    at a million VMs) and page through a verdict that changed under it. A verdict asked
    for by id is pinned: a newer one graded meanwhile is kept beside it, two at most,
    until the pinned one goes ``keep_seconds`` unasked."""

    def __init__(self, keep_seconds: float = KEEP_SECONDS) -> None:
        self.keep_seconds = keep_seconds
        #: The verdict graded last, and the one pinned when it is another.
        self._latest: _Kept | None = None
        self._pinned: _Kept | None = None
        #: How many verdicts were graded, and how many handed out again (``/metrics``).
        self.graded = 0
        self.reused = 0

    def verdict(self, key: VerdictKey, grade: Callable[[], ReactionReport]) -> ReactionReport:
        """The verdict kept for ``key``, or ``grade()``'s, kept in its place."""
        return self.kept(key, grade)[1]

    def kept(
        self, key: VerdictKey, grade: Callable[[], ReactionReport]
    ) -> tuple[str, ReactionReport]:
        """``verdict``'s, with the id it is kept by."""
        now = time.monotonic()
        for entry in (self._latest, self._pinned):
            if entry is not None and entry.key.same(key):
                entry.used = now
                self.reused += 1
                return entry.id, entry.report
        self._forget(None, self._pinned)  # first: one held, or two while one is pinned
        self._drop_stale_pin(now)
        report = grade()
        # Kept, the verdict's objects (tens of millions after a region rollout over a
        # million VMs, made with the collector held off) would all be walked by the next
        # collection, on whichever thread came next: seconds with the interpreter's lock,
        # the event loop and every VM's poll waiting. Frozen, as the server freezes its
        # fleet (``server/heap.py``), no pass walks them; reference counting still frees
        # them when the verdict is let go (it holds no cycles).
        gc.freeze()
        self.graded += 1
        # kept from now: grading may take longer than ``keep_seconds``
        entry = _Kept(key, report, f"{secrets.token_hex(6)}-{self.graded}", time.monotonic())
        self._latest = entry
        return entry.id, report

    def pinned(self, verdict_id: str) -> ReactionReport | None:
        """The verdict kept by ``verdict_id``, pinned from now (None: not kept any more)."""
        entry = self._pin(verdict_id)
        if entry is None:
            return None
        self.reused += 1
        return entry.report

    def pin(self, verdict_id: str) -> None:
        """Pin the verdict kept by ``verdict_id`` (just graded or handed out: its reader
        will ask for it again by id)."""
        self._pin(verdict_id)

    def _pin(self, verdict_id: str) -> _Kept | None:
        now = time.monotonic()
        self._drop_stale_pin(now)
        for entry in (self._latest, self._pinned):
            if entry is not None and entry.id == verdict_id:
                entry.used = now
                self._forget(self._latest, entry)  # one pinned: the one read by id last
                return entry
        return None

    def _drop_stale_pin(self, now: float) -> None:
        pin = self._pinned
        if pin is not None and now - pin.used >= self.keep_seconds:
            self._forget(self._latest, None)

    def _forget(self, latest: _Kept | None, pinned: _Kept | None) -> None:
        """Keep ``latest`` and ``pinned``; a verdict neither holds any more is let go, its
        rows freed in pieces (``ReactionReport.let_go``)."""
        gone = {id(e): e for e in (self._latest, self._pinned) if e is not None}
        self._latest, self._pinned = latest, pinned
        for entry in gone.values():
            if entry is not latest and entry is not pinned:
                entry.report.let_go()

    def holding(self) -> bool:
        """Whether a verdict is kept."""
        return self._latest is not None or self._pinned is not None

    def forget_idle(self) -> bool:
        """Let each verdict go that nobody asked for in ``keep_seconds``; whether one is
        still kept."""
        now = time.monotonic()
        self._drop_stale_pin(now)
        latest = self._latest
        if latest is not None and now - latest.used >= self.keep_seconds:
            self._forget(None, self._pinned)
        return self.holding()


class VerdictMetrics(Collector):
    """The memo's counts at ``/metrics``: how often a verdict was graded, how often one
    kept was handed out again."""

    def __init__(self, registry: CollectorRegistry, memo: VerdictMemo | None = None) -> None:
        self.memo = memo or VerdictMemo()
        registry.register(self)

    def collect(self) -> Iterator[CounterMetricFamily]:
        """The two counters."""
        yield CounterMetricFamily(
            "forewarn_verdicts_graded", "Rehearsal verdicts graded", value=self.memo.graded
        )
        yield CounterMetricFamily(
            "forewarn_verdicts_reused",
            "Rehearsal verdicts handed out again: nothing they were graded from had moved",
            value=self.memo.reused,
        )
