"""Maintenance weather: seeded arrivals per host and operation, the same for the same seed."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from forewarn.controlapi import ControlClient
from forewarn.fleet.loader import example_fleet_text
from forewarn.scenarios import (
    FleetView,
    Runner,
    ScenarioError,
    arrivals,
    parse_scenario,
)
from forewarn.scenarios.weather import Weather
from forewarn.testing.server import Forewarn
from tests.support.cli import run_cli
from tests.support.serverproc import VIRTUAL, ServerProcess

HOUR = 3600.0


def _fleet(text: str | None = None) -> FleetView:
    with Forewarn(text) as forewarn, ControlClient(forewarn.control_url) as control:
        return FleetView.from_topology(control.topology())


@pytest.fixture(scope="module")
def demo() -> FleetView:
    return _fleet()


@pytest.fixture(scope="module")
def thousand() -> FleetView:
    return _fleet(example_fleet_text("thousand"))


def _weather(seed: int, rates: dict[str, float], hours: float = 24, **hosts: Any) -> Weather:
    return Weather(seed, hours * HOUR, {k: r / HOUR for k, r in rates.items()}, dict(hosts))


def test_the_same_seed_gives_the_same_arrivals(demo: FleetView) -> None:
    rates = {"live-migration": 1, "user-reboot": 0.5, "spot-eviction": 0.2}
    first = arrivals(_weather(7, rates), demo)
    assert first == arrivals(_weather(7, rates), demo)
    assert first != arrivals(_weather(8, rates), demo)
    assert [a.at for a in first] == sorted(a.at for a in first)


def test_adding_a_rate_moves_no_other_arrival(demo: FleetView) -> None:
    alone = arrivals(_weather(7, {"live-migration": 1}), demo)
    more = arrivals(_weather(7, {"live-migration": 1, "user-reboot": 3}), demo)
    assert [a for a in more if a.kind == "live-migration"] == alone


def test_rates_are_per_host_and_honoured(thousand: FleetView) -> None:
    """2 live migrations an hour on each of 100 hosts for a day: about 4,800."""
    planned = arrivals(_weather(1, {"live-migration": 2}), thousand)
    assert 4300 < len(planned) < 5300
    per_host = Counter(a.host for a in planned)
    assert len(per_host) == 100
    assert all(20 < n < 80 for n in per_host.values())  # 48 expected on each


def test_each_operation_lands_where_it_can(demo: FleetView) -> None:
    rates = {"spot-eviction": 2, "scale-in": 2, "user-reboot": 2, "hardware-failure": 2}
    planned = arrivals(_weather(3, rates), demo)
    assert {a.kind for a in planned} == set(rates)
    for a in planned:
        if a.kind == "hardware-failure":
            assert a.target == a.host
            continue
        vm = demo.vms[a.target]
        assert vm.host == a.host
        if a.kind == "spot-eviction":
            assert vm.spot
        if a.kind == "scale-in":
            assert demo.scopes[vm.scope].kind == "scale_set"


def test_a_host_can_have_its_own_rates(demo: FleetView) -> None:
    weather = _weather(3, {"live-migration": 2}, **{"host-2": {"live-migration": 0.0}})
    hosts = {a.host for a in arrivals(weather, demo)}
    assert hosts == {"host-1", "host-3", "host-4"}


def test_a_storm_too_big_is_refused(thousand: FleetView) -> None:
    with pytest.raises(ValueError, match="more than 100000 operations; lower its rates"):
        arrivals(_weather(1, {"live-migration": 3600}), thousand)


@pytest.fixture
def fresh() -> Iterator[Any]:
    started: list[Forewarn] = []

    def start() -> Forewarn:
        forewarn = Forewarn().start()
        started.append(forewarn)
        return forewarn

    yield start
    for forewarn in started:
        forewarn.stop()


def test_the_same_seed_plays_the_same_operations_at_the_same_times(fresh: Any) -> None:
    """Two fresh servers, one weather: the same operations created, and skipped, at the same
    platform times (a Spot VM evicted once is gone for the later arrivals)."""
    raw = {"weather": {"seed": 11, "duration": "12h", "rates": {
        "live-migration": "0.5/h", "user-reboot": "0.5/h", "spot-eviction": "0.3/h"}}}  # fmt: skip
    outcomes = []
    for _ in range(2):
        forewarn = fresh()
        control = ControlClient(forewarn.control_url)
        run = Runner(control).run(parse_scenario(raw, "soak"))
        assert run.ok
        outcomes.append(
            [
                (run.platform(a.t), a.arrival.kind, a.arrival.target, a.skipped is None)
                for a in run.weather
            ]
        )
        created = control.operations()
        assert len(created) == sum(1 for a in run.weather if a.operation)
        assert all(op["state"] in ("completed", "canceled") for op in created)  # settled
    assert outcomes[0] == outcomes[1]
    assert len(outcomes[0]) > 5
    assert any(not created for *_, created in outcomes[0])  # evicted VMs: skipped, counted


def test_weather_dry_run_and_json(start_server: Any, tmp_path: Path) -> None:
    server: ServerProcess = start_server(VIRTUAL)
    args = ["scenario", "weather", "--seed", "5", "--duration", "6h",
            "--rate", "live-migration=1/h", "--rate", "spot-eviction=0.5/h"]  # fmt: skip
    first = run_cli([*args, "--dry-run", "--json"], server.control_url)
    assert first.code == 0, first.stderr
    again = run_cli([*args, "--dry-run", "--json"], server.control_url)
    assert json.loads(first.stdout) == json.loads(again.stdout)
    planned = json.loads(first.stdout)
    assert {a["kind"] for a in planned} == {"live-migration", "spot-eviction"}
    assert all(0 <= a["at"] < 6 * HOUR for a in planned)
    played = run_cli([*args, "--json"], server.control_url)
    assert played.code == 0, played.stderr
    outcome = json.loads(played.stdout)
    assert [(round(w["at"]), w["kind"], w["target"]) for w in outcome["weather"]] == [
        (round(a["at"]), a["kind"], a["target"]) for a in planned
    ]
    bad = run_cli(["scenario", "weather", "--duration", "1h", "--rate", "meteor=1/h"],
                  server.control_url)  # fmt: skip
    assert bad.code == 2
    assert "unknown operation 'meteor'" in bad.stderr


def test_a_weather_block_checks_its_operations() -> None:
    with pytest.raises(ScenarioError, match=r"rates: unknown operation 'meteor'"):
        parse_scenario({"weather": {"duration": "1h", "rates": {"meteor": "1/h"}}}, "w")
