"""The agent's Prometheus metrics, in a registry of its own (several agents may share a
process, e.g. in the benchmark, and must not share counters).

An agent with no ``metrics_bind`` has nobody to show them to: it counts into
``NoMetrics`` instead, and never imports prometheus_client (~5 MB of every VM's agent).
"""

from __future__ import annotations

from typing import Any

__all__ = ["AgentMetrics", "NoMetrics"]

_FAST = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)
_MARGIN = (0, 1, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600, 86400)


class AgentMetrics:
    """Counters, gauges and histograms the daemon updates; ``render()`` is /metrics."""

    def __init__(self, vm: str = "") -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.events_seen = Counter(
            "forewarn_agent_events_seen",
            "New events seen, by type and the rule that took them",
            ["type", "rule"],
            registry=r,
        )
        self.handler_runs = Counter(
            "forewarn_agent_handler_runs",
            "Handler runs by handler, phase and result",
            ["handler", "phase", "result"],
            registry=r,
        )
        self.handler_seconds = Histogram(
            "forewarn_agent_handler_duration_seconds",
            "How long handlers ran",
            ["handler", "phase"],
            buckets=_FAST,
            registry=r,
        )
        self.approvals = Counter(
            "forewarn_agent_approvals",
            "Approval steps by mode and result",
            ["mode", "result"],
            registry=r,
        )
        self.errors = Counter(
            "forewarn_agent_errors", "Errors by where they happened", ["kind"], registry=r
        )
        self.detection_to_approval = Histogram(
            "forewarn_agent_detection_to_approval_seconds",
            "Seconds from first seeing an event to approving it",
            buckets=_FAST,
            registry=r,
        )
        self.margin = Histogram(
            "forewarn_agent_notbefore_margin_seconds",
            "Seconds left before NotBefore when an event's handlers finished",
            buckets=_MARGIN,
            registry=r,
        )
        self.missed = Counter(
            "forewarn_agent_missed_events",
            "Events that went Started before their handlers were done",
            registry=r,
        )
        self.recoveries = Counter(
            "forewarn_agent_recoveries", "Recovery phases by result", ["result"], registry=r
        )
        self.polls = Counter(
            "forewarn_agent_polls",
            "Requests to the metadata endpoint by answer (HTTP status, or error: none)",
            ["result"],
            registry=r,
        )
        self.last_poll = Gauge(
            "forewarn_agent_last_successful_poll_timestamp_seconds",
            "When the endpoint last answered with a document",
            registry=r,
        )
        self.ready = Gauge(
            "forewarn_agent_ready", "1 while the agent polls successfully", registry=r
        )
        self.active = Gauge(
            "forewarn_agent_active_events", "Events being prepared or recovered", registry=r
        )
        self.info = Gauge("forewarn_agent_info", "Who this agent is", ["vm"], registry=r)
        if vm:
            self.info.labels(vm=vm).set(1)

    def render(self) -> bytes:
        """The text exposition format."""
        from prometheus_client import generate_latest

        return generate_latest(self.registry)


class _Nothing:
    """A metric nobody reads: every update (and ``labels``) is accepted and forgotten."""

    def labels(self, *args: Any, **kwargs: Any) -> _Nothing:
        return self

    def inc(self, amount: float = 1) -> None:
        pass

    def set(self, value: float) -> None:
        pass

    def observe(self, value: float) -> None:
        pass

    def set_function(self, function: Any) -> None:
        pass


_NOTHING = _Nothing()


class NoMetrics(AgentMetrics):
    """``AgentMetrics``' attributes, recording nothing (no ``metrics_bind``): every metric
    the daemon names is one ``_Nothing``, so a metric added above needs nothing here."""

    def __init__(self, vm: str = "") -> None:  # no super(): no prometheus_client
        pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return _NOTHING

    def render(self) -> bytes:
        return b""
