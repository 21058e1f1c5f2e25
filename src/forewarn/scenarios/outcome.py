"""What a run produced: its steps, its weather, its checks and every document it saw; and
the ``Reporter`` that hears about them as they happen (the CLI draws progress from it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from forewarn.scenarios.expect import Check
from forewarn.scenarios.model import Scenario, Step
from forewarn.scenarios.reaction import Reaction
from forewarn.scenarios.timeline import Timeline
from forewarn.scenarios.weather import Arrival

__all__ = ["ArrivalResult", "NullReporter", "Reporter", "Run", "StepResult"]


@dataclass
class StepResult:
    """What a step did: when (server clock), how late (platform s), its operation."""

    index: int
    summary: str
    t: float
    late: float = 0.0
    operation: str | None = None
    error: str | None = None


@dataclass
class ArrivalResult:
    """One weather arrival: the operation it created, or why it was skipped."""

    arrival: Arrival
    t: float
    operation: str | None = None
    skipped: str | None = None


@dataclass
class Run:
    """The outcome of a run: steps, weather, checks, and every document observed."""

    scenario: Scenario
    start: float
    time_scale: float
    virtual: bool
    timeline: Timeline
    end: float = 0.0
    steps: list[StepResult] = field(default_factory=list)
    weather: list[ArrivalResult] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    operations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: How the fleet reacted to the run's operations, as the report grades it (which the
    #: checks do not judge); None when the server keeps no report.
    reactions: list[Reaction] | None = None

    @property
    def ok(self) -> bool:
        """True when every step ran and every check (waits, expectations) held; how the
        fleet reacted (``reactions``) is the report's verdict, not part of it."""
        return all(c.ok for c in self.checks)

    def platform(self, t: float) -> float:
        """Server time ``t`` as platform seconds since the start."""
        return (t - self.start) * self.time_scale


class Reporter(Protocol):
    """Hears what a run does, as it does it (the CLI draws progress from it)."""

    def began(self, run: Run) -> None: ...
    def step(self, step: Step, result: StepResult) -> None: ...
    def arrival(self, result: ArrivalResult) -> None: ...
    def waiting(self, what: str) -> None: ...
    def tick(self, now: float) -> None: ...


class NullReporter:
    """Hears nothing."""

    def began(self, run: Run) -> None:
        pass

    def step(self, step: Step, result: StepResult) -> None:
        pass

    def arrival(self, result: ArrivalResult) -> None:
        pass

    def waiting(self, what: str) -> None:
        pass

    def tick(self, now: float) -> None:
        pass
