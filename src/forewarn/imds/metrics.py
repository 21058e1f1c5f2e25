"""Prometheus metrics of the endpoint, cheap enough for the hot path.

Counting is a list increment on the event loop's thread, one list per route indexed by
status; the numbers become Prometheus samples only when scraped (``prometheus_client``'s
own counters take a lock per ``inc``, a tenth of the endpoint's time per request, and a
dict keyed by a (route, status) tuple costs some 1,800 instructions a response, a tenth
of a repeated poll's).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

__all__ = ["LABELS", "STATUSES", "EndpointMetrics"]

#: HTTP statuses are below this.
STATUSES = 600
#: Each series' label names (the Metrics reference page reads them here).
LABELS: dict[str, tuple[str, ...]] = {"forewarn_imds_responses": ("route", "status")}


class EndpointMetrics(Collector):
    """Responses by route and status (route: a known path or "other")."""

    def __init__(self, registry: CollectorRegistry) -> None:
        #: Per route, the count of each HTTP status (an index below ``STATUSES``).
        self._by_route: dict[str, list[int]] = {}
        #: Anything else (an injected fault's no-answer is a negative status).
        self._rare: dict[tuple[str, int], int] = {}
        registry.register(self)

    def observe(self, route: str, status: int) -> None:
        """Count one response."""
        counts = self._by_route.get(route)
        if counts is not None and 0 <= status < STATUSES:
            counts[status] += 1
        else:
            self._observe_first(route, status)

    def _observe_first(self, route: str, status: int) -> None:
        """A route's first response, or a status no list holds."""
        if 0 <= status < STATUSES:
            self._by_route.setdefault(route, [0] * STATUSES)[status] += 1
        else:
            key = (route, status)
            self._rare[key] = self._rare.get(key, 0) + 1

    def collect(self) -> Iterator[CounterMetricFamily]:
        """The counts as one Prometheus counter family."""
        family = CounterMetricFamily(
            "forewarn_imds_responses",
            "Metadata endpoint responses by route and status",
            labels=LABELS["forewarn_imds_responses"],
        )
        counts = dict(self._rare)
        for route, by_status in self._by_route.items():
            counts.update(((route, status), n) for status, n in enumerate(by_status) if n)
        for (route, status), count in sorted(counts.items()):
            family.add_metric([route, str(status)], count)
        yield family
