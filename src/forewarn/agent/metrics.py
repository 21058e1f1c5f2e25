"""The agent's Prometheus metrics, in a registry of its own (several agents may share a
process, e.g. in the benchmark, and must not share counters).

An agent with no ``metrics_bind`` has nobody to show them to: it counts into
``NoMetrics`` instead, and never imports prometheus_client (~4 MB of every VM's agent).
One with a ``metrics_bind`` (the default: ``/healthz``, ``/readyz`` and ``/status`` are
served there too) counts into ``LazyMetrics``, which loads prometheus_client on the first
scrape of ``/metrics``: a VM nobody scrapes never pays for it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SPECS", "AgentMetrics", "LazyMetrics", "NoMetrics"]

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
        import prometheus_client

        self.registry = prometheus_client.CollectorRegistry(auto_describe=True)
        kinds = {"counter": prometheus_client.Counter, "gauge": prometheus_client.Gauge,
                 "histogram": prometheus_client.Histogram}  # fmt: skip
        for attribute, (kind, name, text, labels, buckets) in SPECS.items():
            extra = {"buckets": buckets} if buckets else {}
            metric = kinds[kind](name, text, labels, registry=self.registry, **extra)
            setattr(self, attribute, metric)
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


#: Observations a histogram keeps before its first scrape; past them, the real metrics load.
PENDING_OBSERVATIONS = 1024

#: A child's label values, in the order ``SPECS`` names the labels (() for none).
_Key = tuple[str, ...]


def _child(real: Any, key: _Key) -> Any:
    """The prometheus_client metric's child for ``key`` (itself, for a metric without labels)."""
    return real.labels(*key) if key else real


class _Tally:
    """One metric before the first scrape: what each update would have done, in brief
    (a counter's sum, a gauge's value and function, a histogram's observations), kept per
    label values; once the real metrics are loaded, every update goes to them.

    The replay does one kind of update at a time, whatever order they came in: sums and
    last values, then functions (a gauge's function hides whatever is set, before it or
    after, in prometheus_client as here), then observations."""

    def __init__(self, owner: LazyMetrics, attribute: str) -> None:
        self.owner = owner
        self.attribute = attribute
        self.label_names = SPECS[attribute][3]
        self.values: dict[_Key, float] = {}
        self.set_keys: set[_Key] = set()
        self.functions: dict[_Key, Any] = {}
        self.observed: dict[_Key, list[float]] = {}

    def labels(self, *values: str, **named: str) -> _Child:
        if self.owner.loaded is not None:
            return getattr(self.owner.loaded, self.attribute).labels(*values, **named)  # type: ignore[no-any-return]
        if values and named:
            raise ValueError("Can't pass both *args and **kwargs")
        given = len(values) if values else len(named)
        if not self.label_names or given != len(self.label_names):
            raise ValueError("Incorrect label count")
        if named and set(named) != set(self.label_names):
            raise ValueError("Incorrect label names")
        key = tuple(str(v) for v in values) or tuple(str(named[n]) for n in self.label_names)
        self._create(key)
        return _Child(self, key)

    def _create(self, key: _Key) -> None:
        """A child exists (and is scraped, at zero) from its first ``labels()`` on."""
        if SPECS[self.attribute][0] == "histogram":
            self.observed.setdefault(key, [])
        else:
            self.values.setdefault(key, 0.0)

    def _no_labels(self) -> _Child:
        if self.label_names:
            raise ValueError(f"{SPECS[self.attribute][1]}: labels() first")
        return _Child(self, ())

    def inc(self, amount: float = 1) -> None:
        self._no_labels().inc(amount)

    def set(self, value: float) -> None:
        self._no_labels().set(value)

    def observe(self, value: float) -> None:
        self._no_labels().observe(value)

    def set_function(self, function: Any) -> None:
        self._no_labels().set_function(function)

    def replay(self, real: Any) -> None:
        """Do to ``real`` (the prometheus_client metric) what was done to this tally."""
        for key, value in self.values.items():
            (_child(real, key).set if key in self.set_keys else _child(real, key).inc)(value)
        for key, function in self.functions.items():
            _child(real, key).set_function(function)
        for key, observed in self.observed.items():
            child = _child(real, key)
            for value in observed:
                child.observe(value)


class _Child:
    """A metric with its label values, as ``labels()`` gives it."""

    __slots__ = ("key", "tally")

    def __init__(self, tally: _Tally, key: _Key) -> None:
        self.tally = tally
        self.key = key

    def _real(self) -> Any:
        loaded = self.tally.owner.loaded
        if loaded is None:
            return None
        return _child(getattr(loaded, self.tally.attribute), self.key)

    def inc(self, amount: float = 1) -> None:
        if (real := self._real()) is not None:
            real.inc(amount)
            return
        if amount < 0 and SPECS[self.tally.attribute][0] == "counter":
            raise ValueError("Counters can only be incremented by non-negative amounts.")
        values = self.tally.values
        values[self.key] = values.get(self.key, 0.0) + amount

    def set(self, value: float) -> None:
        if (real := self._real()) is not None:
            real.set(value)
            return
        self.tally.values[self.key] = float(value)
        self.tally.set_keys.add(self.key)

    def set_function(self, function: Any) -> None:
        if (real := self._real()) is not None:
            real.set_function(function)
            return
        self.tally.functions[self.key] = function

    def observe(self, value: float) -> None:
        if (real := self._real()) is not None:
            real.observe(value)
            return
        observed = self.tally.observed.setdefault(self.key, [])
        observed.append(value)
        if len(observed) >= PENDING_OBSERVATIONS:
            self.tally.owner.load()


class LazyMetrics(AgentMetrics):
    """``AgentMetrics`` that loads prometheus_client on the first ``render()`` (the first
    scrape): until then each metric is a ``_Tally``, replayed into the real one then.

    What a scrape shows is what ``AgentMetrics`` would have shown, but for the counters'
    ``_created`` samples: the time of the first scrape, not of the start."""

    def __init__(self, vm: str = "") -> None:  # no super(): no prometheus_client yet
        self._vm = vm
        self._tallies: dict[str, _Tally] = {}
        #: The real metrics, once loaded.
        self.loaded: AgentMetrics | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in SPECS:
            raise AttributeError(name)
        if self.loaded is not None:
            return getattr(self.loaded, name)
        tally = self._tallies.get(name)
        if tally is None:
            tally = self._tallies[name] = _Tally(self, name)
        return tally

    def load(self) -> AgentMetrics:
        """The real metrics, loaded (and every update so far replayed) on first use."""
        if self.loaded is None:
            real = AgentMetrics(self._vm)
            for name, tally in self._tallies.items():
                tally.replay(getattr(real, name))
            self.loaded = real
            self._tallies.clear()
        return self.loaded

    @property
    def registry(self) -> Any:  # type: ignore[override]
        return self.load().registry

    def render(self) -> bytes:
        return self.load().render()
