"""The agent's default metrics (``LazyMetrics``) load prometheus_client on the first
scrape: until then updates are tallied, and the first scrape shows what ``AgentMetrics``,
updated the same way from the start, shows."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest

from forewarn.agent.metrics import PENDING_OBSERVATIONS, SPECS, AgentMetrics, LazyMetrics


def _exposition(metrics: AgentMetrics) -> str:
    # ``_created``: when the metric was made (the start, or the lazy one's first scrape)
    return re.sub(r".*_created.*\n", "", metrics.render().decode())


def _update(metrics: Any, round_: int) -> None:
    """Each kind of update the daemon makes, on every metric of ``SPECS``."""
    for attribute, (kind, _, _, labels, _) in SPECS.items():
        metric = getattr(metrics, attribute)
        values = [f"{name}-{round_ % 2}" for name in labels]
        target = metric.labels(*values) if labels else metric
        if kind == "counter":
            target.inc()
            target.inc(2.5)
        elif kind == "histogram":
            for seconds in (0.02, 3.0, 7200.0 * round_):
                target.observe(seconds)
        elif attribute in ("ready", "active"):
            target.set_function(lambda r=round_: float(r + 7))
        else:
            target.set(10.0 + round_)
            target.inc(0.5)
    metrics.approvals.labels(mode="coordinated", result="blocked").inc()
    metrics.errors.labels("created-only")  # a child exists from labels() on, at zero
    metrics.handler_seconds.labels("h", "recover")


def test_the_first_scrape_shows_what_the_metrics_kept_from_the_start_show() -> None:
    real, lazy = AgentMetrics(), LazyMetrics()
    for round_ in (0, 1):
        _update(real, round_)
        _update(lazy, round_)
    assert lazy.loaded is None
    first = _exposition(lazy)
    assert lazy.loaded is not None
    assert first == _exposition(real)
    assert 'forewarn_agent_approvals_total{mode="coordinated",result="blocked"} 2.0' in first
    assert 'forewarn_agent_errors_total{kind="created-only"} 0.0' in first
    assert "forewarn_agent_ready 8.0" in first
    assert "forewarn_agent_last_successful_poll_timestamp_seconds 11.5" in first
    _update(real, 2)  # after the first scrape, updates go to the real metrics
    _update(lazy, 2)
    assert _exposition(lazy) == _exposition(real)


def test_children_taken_before_the_first_scrape_count_after_it() -> None:
    lazy = LazyMetrics()
    polls, margin = lazy.polls.labels("304"), lazy.margin
    polls.inc()
    lazy.render()
    polls.inc()
    margin.observe(30.0)
    text = lazy.render().decode()
    assert 'forewarn_agent_polls_total{result="304"} 2.0' in text
    assert "forewarn_agent_notbefore_margin_seconds_count 1.0" in text


def test_wrong_labels_and_negative_counts_fail_as_prometheus_client_fails() -> None:
    lazy = LazyMetrics()
    with pytest.raises(ValueError, match="label count"):
        lazy.polls.labels("200", "extra")
    with pytest.raises(ValueError, match="label names"):
        lazy.approvals.labels(mode="x", outcome="y")
    with pytest.raises(ValueError):
        lazy.missed.labels("x")
    with pytest.raises(ValueError):
        lazy.polls.inc()  # a labelled metric counts through labels() only
    with pytest.raises(ValueError, match="non-negative"):
        lazy.missed.inc(-1)
    assert lazy.loaded is None


def test_observations_kept_before_a_scrape_are_bounded() -> None:
    lazy = LazyMetrics()
    for _ in range(PENDING_OBSERVATIONS + 5):
        lazy.detection_to_approval.observe(1.0)
    assert lazy.loaded is not None  # loaded, rather than keep more
    count = f"forewarn_agent_detection_to_approval_seconds_count {PENDING_OBSERVATIONS + 5}.0"
    assert count in lazy.render().decode()


def test_prometheus_client_loads_on_the_first_scrape_only() -> None:
    code = (
        "import sys\n"
        "from forewarn.agent.metrics import LazyMetrics\n"
        "m = LazyMetrics(); m.polls.labels('200').inc(); m.ready.set_function(lambda: 1.0)\n"
        "m.handler_seconds.labels('h', 'prepare').observe(0.5)\n"
        "before = 'prometheus_client' in sys.modules\n"
        "text = m.render().decode()\n"
        "print(before, 'prometheus_client' in sys.modules, 'forewarn_agent_ready 1.0' in text)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "True"]


def test_a_child_named_either_way_is_one_child_in_the_order_of_its_updates() -> None:
    real, lazy = AgentMetrics(), LazyMetrics()
    for metrics in (real, lazy):
        metrics.info.labels(vm="a").set(1)
        metrics.info.labels("a").inc(2)
        metrics.info.labels(vm="a").set(5)
    text = _exposition(lazy)
    assert text == _exposition(real)
    assert 'forewarn_agent_info{vm="a"} 5.0' in text


def test_a_gauge_with_a_function_shows_the_function_whatever_is_set_after() -> None:
    real, lazy = AgentMetrics(), LazyMetrics()
    for metrics in (real, lazy):
        metrics.ready.set_function(lambda: 8.0)
        metrics.ready.set(3)
        metrics.active.set(2)
        metrics.active.set_function(lambda: 4.0)
        metrics.active.inc()
    text = _exposition(lazy)
    assert text == _exposition(real)
    assert "forewarn_agent_ready 8.0" in text
    assert "forewarn_agent_active_events 4.0" in text
