"""The agent's Prometheus metrics: counted here, and written in Prometheus's text
exposition format (version 0.0.4) for ``/metrics``.

The agent keeps fourteen metrics of three kinds (counters, gauges, histograms) and shows
them to one scraper: counting them is a dict of floats, and the text format is a line
per series, so the VM install needs no Prometheus library (one distribution). Each agent
has metrics of its own (several may share a process, e.g. in the benchmark). One with no
``metrics_bind`` has nobody to show them to: it counts into ``NoMetrics``, which forgets.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["CONTENT_TYPE", "SPECS", "AgentMetrics", "Metric", "NoMetrics", "Series"]

#: What ``/metrics`` answers as (the text format's media type).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_FAST = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)
_MARGIN = (0, 1, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600, 86400)


#: Every metric the agent keeps: attribute -> (kind, name, help, label names, buckets).
SPECS: dict[str, tuple[str, str, str, tuple[str, ...], tuple[float, ...]]] = {
    "events_seen": ("counter", "forewarn_agent_events_seen",
                    "New events seen, by type and the rule that took them", ("type", "rule"), ()),
    "handler_runs": ("counter", "forewarn_agent_handler_runs",
                     "Handler runs by handler, phase and result",
                     ("handler", "phase", "result"), ()),
    "handler_seconds": ("histogram", "forewarn_agent_handler_duration_seconds",
                        "How long handlers ran", ("handler", "phase"), _FAST),
    "approvals": ("counter", "forewarn_agent_approvals", "Approval steps by mode and result",
                  ("mode", "result"), ()),
    "errors": ("counter", "forewarn_agent_errors", "Errors by where they happened",
               ("kind",), ()),
    "detection_to_approval": ("histogram", "forewarn_agent_detection_to_approval_seconds",
                              "Seconds from first seeing an event to approving it", (), _FAST),
    "margin": ("histogram", "forewarn_agent_notbefore_margin_seconds",
               "Seconds left before NotBefore when an event's handlers finished", (), _MARGIN),
    "missed": ("counter", "forewarn_agent_missed_events",
               "Events that went Started before their handlers were done", (), ()),
    "recoveries": ("counter", "forewarn_agent_recoveries", "Recovery phases by result",
                   ("result",), ()),
    "polls": ("counter", "forewarn_agent_polls",
              "Requests to the metadata endpoint by answer (HTTP status, or error: none)",
              ("result",), ()),
    "last_poll": ("gauge", "forewarn_agent_last_successful_poll_timestamp_seconds",
                  "When the endpoint last answered with a document", (), ()),
    "ready": ("gauge", "forewarn_agent_ready", "1 while the agent polls successfully", (), ()),
    "active": ("gauge", "forewarn_agent_active_events", "Events being prepared or recovered",
               (), ()),
    "info": ("gauge", "forewarn_agent_info", "Who this agent is", ("vm",), ()),
}  # fmt: skip


def _number(value: float) -> str:
    """A sample's value as Prometheus writes it (``1.0``, ``+Inf``, ``1e+06``)."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    text = repr(float(value))
    dot = text.find(".")
    if value > 0 and dot > 6:  # Go's exponent form, as a bucket's bound reads elsewhere
        mantissa = f"{text[0]}.{text[1:dot]}{text[dot + 1 :]}".rstrip("0.")
        return f"{mantissa}e+0{dot - 1}"
    return text


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


class Series:
    """One metric's series for one set of label values: a number (a counter's sum, a
    gauge's value or function), or a histogram's bucket counts, sum and count."""

    __slots__ = ("bounds", "buckets", "count", "function", "kind", "sum", "value")

    def __init__(self, kind: str, bounds: tuple[float, ...]) -> None:
        self.kind = kind
        self.bounds = bounds
        self.value = 0.0
        self.function: Callable[[], float] | None = None
        self.buckets = [0] * len(bounds)
        self.sum = 0.0
        self.count = 0

    def inc(self, amount: float = 1) -> None:
        if amount < 0 and self.kind == "counter":
            raise ValueError("a counter only goes up")
        self.value += amount

    def set(self, value: float) -> None:
        self.value = float(value)

    def set_function(self, function: Callable[[], float]) -> None:
        """The gauge shows ``function()`` at each scrape, whatever is set."""
        self.function = function

    def observe(self, value: float) -> None:
        for index, bound in enumerate(self.bounds):
            if value <= bound:
                self.buckets[index] += 1
        self.sum += value
        self.count += 1

    def current(self) -> float:
        return float(self.function()) if self.function is not None else self.value


class Metric:
    """One metric: its series by label values (``labels()``), or its one series."""

    def __init__(self, kind: str, name: str, text: str, labels: tuple[str, ...],
                 buckets: tuple[float, ...]) -> None:  # fmt: skip
        self.kind, self.name, self.text = kind, name, text
        self.label_names = labels
        self.bounds = buckets
        self.series: dict[tuple[str, ...], Series] = {}
        if not labels:
            self.series[()] = Series(kind, buckets)

    def labels(self, *values: str, **named: str) -> Series:
        """The series of these label values (made, at zero, the first time)."""
        if named:
            values = tuple(named[name] for name in self.label_names if name in named)
        if len(values) != len(self.label_names) or (named and len(named) != len(values)):
            raise ValueError(f"{self.name} takes the labels {', '.join(self.label_names)}")
        key = tuple(str(v) for v in values)
        series = self.series.get(key)
        if series is None:
            series = self.series[key] = Series(self.kind, self.bounds)
        return series

    def _one(self) -> Series:
        if self.label_names:
            raise ValueError(f"{self.name}: labels() first")
        return self.series[()]

    def inc(self, amount: float = 1) -> None:
        self._one().inc(amount)

    def set(self, value: float) -> None:
        self._one().set(value)

    def set_function(self, function: Callable[[], float]) -> None:
        self._one().set_function(function)

    def observe(self, value: float) -> None:
        self._one().observe(value)

    def lines(self) -> list[str]:
        """This metric in the text format: its HELP and TYPE, then a line per sample."""
        name = self.name + ("_total" if self.kind == "counter" else "")
        out = [f"# HELP {name} {self.text}", f"# TYPE {name} {self.kind}"]
        for key, series in self.series.items():
            pairs = [f'{n}="{_escape(v)}"' for n, v in zip(self.label_names, key, strict=True)]
            if self.kind != "histogram":
                out.append(f"{name}{_labels(pairs)} {_number(series.current())}")
                continue
            for bound, count in zip((*self.bounds, math.inf), (*series.buckets, series.count),
                                    strict=True):  # fmt: skip
                bucket = [*pairs, f'le="{_number(bound)}"']
                out.append(f"{name}_bucket{_labels(bucket)} {_number(count)}")
            out.append(f"{name}_count{_labels(pairs)} {_number(series.count)}")
            out.append(f"{name}_sum{_labels(pairs)} {_number(series.sum)}")
        return out


def _labels(pairs: list[str]) -> str:
    return "{" + ",".join(pairs) + "}" if pairs else ""


class AgentMetrics:
    """Counters, gauges and histograms the daemon updates; ``render()`` is /metrics."""

    events_seen: Any
    handler_runs: Any
    handler_seconds: Any
    approvals: Any
    errors: Any
    detection_to_approval: Any
    margin: Any
    missed: Any
    recoveries: Any
    polls: Any
    last_poll: Any
    ready: Any
    active: Any
    info: Any

    def __init__(self, vm: str = "") -> None:
        for attribute, spec in SPECS.items():
            setattr(self, attribute, Metric(*spec))
        if vm:
            self.info.labels(vm=vm).set(1)

    def render(self) -> bytes:
        """The text exposition format."""
        lines = [line for attribute in SPECS for line in getattr(self, attribute).lines()]
        return ("\n".join(lines) + "\n").encode()


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

    def __init__(self, vm: str = "") -> None:  # no super(): nothing to count into
        pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return _NOTHING

    def render(self) -> bytes:
        return b""
