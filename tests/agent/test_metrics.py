"""``/metrics`` in Prometheus's text format: every metric with its HELP and TYPE, counters
as ``_total``, histograms' cumulative buckets, gauges' functions read at each scrape,
label values escaped; a wrong update refused."""

from __future__ import annotations

import pytest

from forewarn.agent.metrics import SPECS, AgentMetrics


def _samples(metrics: AgentMetrics) -> dict[str, float]:
    lines = metrics.render().decode().splitlines()
    return {line.rpartition(" ")[0]: float(line.rpartition(" ")[2])
            for line in lines if not line.startswith("#")}  # fmt: skip


def test_every_metric_is_described_in_order() -> None:
    text = AgentMetrics().render().decode()
    for kind, name, help_text, _, _ in SPECS.values():
        shown = name + ("_total" if kind == "counter" else "")
        assert f"# HELP {shown} {help_text}\n# TYPE {shown} {kind}\n" in text
    assert text.endswith("\n") and "forewarn_agent_ready 0.0\n" in text


def test_counters_gauges_and_histograms() -> None:
    metrics = AgentMetrics("web-0")
    metrics.polls.labels("304").inc()
    metrics.polls.labels(result="304").inc(2.5)
    metrics.errors.labels("created-only")  # a series exists from labels() on, at zero
    metrics.handler_seconds.labels("h", "prepare").observe(0.02)
    metrics.handler_seconds.labels("h", "prepare").observe(7200.0)
    ready = [0.0]
    metrics.ready.set_function(lambda: ready[0])
    metrics.last_poll.set(10.0)
    metrics.last_poll.inc(0.5)
    ready[0] = 1.0
    samples = _samples(metrics)
    assert samples['forewarn_agent_polls_total{result="304"}'] == 3.5
    assert samples['forewarn_agent_errors_total{kind="created-only"}'] == 0.0
    assert samples['forewarn_agent_info{vm="web-0"}'] == 1.0
    assert samples["forewarn_agent_ready"] == 1.0
    assert samples["forewarn_agent_last_successful_poll_timestamp_seconds"] == 10.5
    histogram = "forewarn_agent_handler_duration_seconds"
    labels = 'handler="h",phase="prepare"'
    assert samples[f'{histogram}_bucket{{{labels},le="0.01"}}'] == 0.0
    assert samples[f'{histogram}_bucket{{{labels},le="0.05"}}'] == 1.0
    assert samples[f'{histogram}_bucket{{{labels},le="1800.0"}}'] == 1.0
    assert samples[f'{histogram}_bucket{{{labels},le="+Inf"}}'] == 2.0
    assert samples[f"{histogram}_count{{{labels}}}"] == 2.0
    assert samples[f"{histogram}_sum{{{labels}}}"] == 7200.02


def test_label_values_are_escaped() -> None:
    metrics = AgentMetrics()
    metrics.errors.labels('a "b"\\c\nd').inc()
    assert 'forewarn_agent_errors_total{kind="a \\"b\\"\\\\c\\nd"} 1.0' in metrics.render().decode()


def test_wrong_updates_are_refused() -> None:
    metrics = AgentMetrics()
    with pytest.raises(ValueError, match="takes the labels result"):
        metrics.polls.labels("200", "extra")
    with pytest.raises(ValueError, match="takes the labels mode, result"):
        metrics.approvals.labels(mode="x", outcome="y")
    with pytest.raises(ValueError, match="labels"):
        metrics.polls.inc()  # a labelled metric counts through labels() only
    with pytest.raises(ValueError, match="only goes up"):
        metrics.missed.inc(-1)
