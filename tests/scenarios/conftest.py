"""Playing scenarios against an in-process forewarn on a virtual clock, and watching every
VM's own endpoint (its real loopback port) after each transition the run goes through."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from forewarn.contract import format_rfc1123
from forewarn.controlapi import ControlClient
from forewarn.scenarios import Run, Runner, Scenario
from forewarn.testing.server import Fleet, Forewarn

LATEST = "2020-07-01"
#: What injected status faults answer (recorded as "HTTP 410" and so on).
FAULTED = (410, 429, 500, 503)


@dataclass(frozen=True)
class Doc:
    """A document one VM got: when (platform seconds from the start), and its events as
    (type, status, resources, NotBefore, DurationInSeconds, EventSource)."""

    at: float
    incarnation: int
    events: tuple[tuple[Any, ...], ...]

    @property
    def states(self) -> list[str]:
        return [f"{e[0]} {e[1]}" for e in self.events]


@dataclass
class Watch:
    """Every VM's documents over a run, as each VM's own endpoint served them."""

    forewarn: Forewarn
    start: float = 0.0
    docs: dict[str, list[Doc | str]] = field(default_factory=dict)
    client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=10, trust_env=False))

    def tick(self, now: float) -> None:
        for vm in self.forewarn.vms:
            seen = self.docs.setdefault(vm, [])
            if seen and seen[-1] == "deleted":
                continue
            response = self.client.get(
                self.forewarn.url(vm) + "/metadata/scheduledevents",
                params={"api-version": LATEST},
                headers={"Metadata": "true"},
            )
            if response.status_code == 404:
                seen.append("deleted")
                continue
            if response.status_code in FAULTED:  # an injected fault (a scenario's fault step)
                if not seen or seen[-1] != f"HTTP {response.status_code}":
                    seen.append(f"HTTP {response.status_code}")
                continue
            assert response.status_code == 200, response.text
            body = response.json()
            if (
                seen
                and isinstance(seen[-1], Doc)
                and seen[-1].incarnation == body["DocumentIncarnation"]
            ):
                continue
            events = tuple(
                (e["EventType"], e["EventStatus"], tuple(e["Resources"]), e["NotBefore"],
                 e["DurationInSeconds"], e["EventSource"])
                for e in body["Events"]
            )  # fmt: skip
            seen.append(Doc(round(now - self.start, 3), body["DocumentIncarnation"], events))

    def timeline(self, vm: str) -> list[tuple[float, list[str]] | str]:
        """``vm``'s documents as (when, event states), "deleted", or "HTTP 410" (a fault)."""
        return [d if isinstance(d, str) else (d.at, d.states) for d in self.docs[vm]]

    def at(self, seconds: float) -> str:
        """A NotBefore ``seconds`` after the start, as documents write it."""
        return format_rfc1123(self.start + seconds)


@dataclass
class Played:
    run: Run
    watch: Watch


@pytest.fixture
def play() -> Iterator[Any]:
    """``play(scenario, fleet=None, target=None)``: a fresh in-process forewarn (virtual
    clock, every scope enabled), the scenario played on it, every VM watched."""
    started: list[Forewarn] = []

    def run(scenario: Scenario, fleet: Fleet = None, target: str | None = None) -> Played:
        forewarn = Forewarn(fleet).start()
        started.append(forewarn)
        watch = Watch(forewarn, start=forewarn.now())
        control = ControlClient(forewarn.control_url)
        outcome = Runner(control, target=target, on_tick=watch.tick).run(scenario)
        assert outcome.start == watch.start
        return Played(outcome, watch)

    yield run
    for forewarn in started:
        forewarn.stop()
