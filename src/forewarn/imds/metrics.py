"""Prometheus metrics of the endpoint, cheap enough for the hot path."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

__all__ = ["EndpointMetrics"]


class EndpointMetrics:
    """Responses by route and status; label children are cached (``labels()`` is slow)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._responses = Counter(
            "forewarn_imds_responses",
            "Metadata endpoint responses by route and status",
            ["route", "status"],
            registry=registry,
        )
        self._children: dict[tuple[str, int], Counter] = {}

    def observe(self, route: str, status: int) -> None:
        """Count one response (``route`` is one of a handful of known values)."""
        child = self._children.get((route, status))
        if child is None:
            child = self._responses.labels(route, str(status))
            self._children[(route, status)] = child
        child.inc()
