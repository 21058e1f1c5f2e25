"""An agent with no ``metrics_bind`` counts into ``NoMetrics``: every update the real
metrics take is taken and forgotten, and it renders nothing."""

from __future__ import annotations

import subprocess
import sys

from forewarn.agent.metrics import AgentMetrics, NoMetrics


def test_every_metric_the_agent_keeps_is_taken_and_forgotten_without_metrics() -> None:
    real, off = AgentMetrics("web-0"), NoMetrics("web-0")
    metrics = {name: m for name, m in vars(real).items() if name != "registry"}
    assert len(metrics) >= 14
    for name in metrics:  # a metric added to AgentMetrics is one NoMetrics takes too
        off_metric = getattr(off, name)
        target = off_metric.labels("x", "y", "z")
        target.inc()
        target.set(1.0)
        target.observe(1.0)
        off_metric.inc()
        off_metric.set_function(lambda: 1.0)
    assert off.render() == b""


def test_no_metrics_loads_no_metrics_library() -> None:
    code = (
        "import sys\n"
        "from forewarn.agent.metrics import NoMetrics\n"
        "m = NoMetrics('web-0'); m.polls.labels('200').inc(); m.ready.set(1)\n"
        "print('prometheus_client' in sys.modules, m.render())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False b''"
