"""The endpoint's response counter: every response counted under its route and status."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from forewarn.imds.metrics import EndpointMetrics


def scraped(registry: CollectorRegistry) -> dict[tuple[str, str], float]:
    """(route, status) -> count, as a scrape reads them."""
    text = generate_latest(registry).decode()
    return {
        (s.labels["route"], s.labels["status"]): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "forewarn_imds_responses_total"
    }


def test_each_route_and_status_is_counted_apart() -> None:
    registry = CollectorRegistry()
    metrics = EndpointMetrics(registry)
    assert scraped(registry) == {}
    for route, status in [("/a", 200)] * 3 + [("/a", 429), ("/b", 200), ("other", 404)]:
        metrics.observe(route, status)
    # Statuses no list holds: an injected fault's no-answer (negative), and beyond HTTP's.
    for status in (-1, -2, -1, 600, 999, 0, 599):
        metrics.observe("/a", status)
    assert scraped(registry) == {
        ("/a", "200"): 3.0, ("/a", "429"): 1.0, ("/b", "200"): 1.0, ("other", "404"): 1.0,
        ("/a", "-1"): 2.0, ("/a", "-2"): 1.0, ("/a", "600"): 1.0, ("/a", "999"): 1.0,
        ("/a", "0"): 1.0, ("/a", "599"): 1.0,
    }  # fmt: skip
    metrics.observe("/b", 200)
    assert scraped(registry)[("/b", "200")] == 2.0
