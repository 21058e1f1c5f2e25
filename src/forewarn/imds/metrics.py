"""Prometheus metrics of the endpoint, cheap enough for the hot path.

Counting is a dict increment on the event loop's thread; the numbers become Prometheus
samples only when scraped (``prometheus_client``'s own counters take a lock per ``inc``,
a tenth of the endpoint's time per request).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

__all__ = ["EndpointMetrics"]


class EndpointMetrics(Collector):
    """Responses by route and status (route: a known path or "other")."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._counts: dict[tuple[str, int], int] = {}
        registry.register(self)

    def observe(self, route: str, status: int) -> None:
        """Count one response."""
        key = (route, status)
        self._counts[key] = self._counts.get(key, 0) + 1

    def collect(self) -> Iterator[CounterMetricFamily]:
        """The counts as one Prometheus counter family."""
        family = CounterMetricFamily(
            "forewarn_imds_responses",
            "Metadata endpoint responses by route and status",
            labels=["route", "status"],
        )
        for (route, status), count in sorted(self._counts.items()):
            family.add_metric([route, str(status)], count)
        yield family
