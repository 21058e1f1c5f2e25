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
the next is graded, so at most one is ever held. A kept verdict is frozen out of the
collector's passes (``gc.freeze``): walking it would hold the interpreter for seconds.
"""

from __future__ import annotations

import gc
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


class VerdictMemo:
    """One graded verdict and its key (used on the tracker's thread only)."""

    def __init__(self, keep_seconds: float = KEEP_SECONDS) -> None:
        self.keep_seconds = keep_seconds
        self._key: VerdictKey | None = None
        self._report: ReactionReport | None = None
        self._used = 0.0
        #: How many verdicts were graded, and how many handed out again (``/metrics``).
        self.graded = 0
        self.reused = 0

    def verdict(self, key: VerdictKey, grade: Callable[[], ReactionReport]) -> ReactionReport:
        """The verdict kept for ``key``, or ``grade()``'s, kept in its place."""
        self._used = time.monotonic()
        if self._report is not None and self._key is not None and self._key.same(key):
            self.reused += 1
            return self._report
        self._let_go()  # the old one first: one held, never two
        report = grade()
        # Kept, the verdict's objects (tens of millions after a region rollout over a
        # million VMs, made with the collector held off) would all be walked by the next
        # collection, on whichever thread came next: seconds with the interpreter's lock,
        # the event loop and every VM's poll waiting. Frozen, as the server freezes its
        # fleet (``server/heap.py``), no pass walks them; reference counting still frees
        # them when the verdict is let go (it holds no cycles).
        gc.freeze()
        self._key, self._report = key, report
        self._used = time.monotonic()  # kept from now: grading may take longer than that
        self.graded += 1
        return report

    def holding(self) -> bool:
        """Whether a verdict is kept."""
        return self._report is not None

    def forget_idle(self) -> bool:
        """Let the verdict go when nobody asked for it in ``keep_seconds``; whether one is
        still kept."""
        if self._report is not None and time.monotonic() - self._used >= self.keep_seconds:
            self._let_go()
        return self._report is not None

    def _let_go(self) -> None:
        """Forget the verdict kept, its rows freed in pieces (``ReactionReport.let_go``)."""
        report, self._key, self._report = self._report, None, None
        if report is not None:
            report.let_go()


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
