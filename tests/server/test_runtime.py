"""The composition root: what ``build_runtime`` wires from a configuration and a database,
what it remembers for the next start, and what it refuses (changing nothing)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from forewarn.fabric import Clock
from forewarn.fleet import FleetError
from forewarn.server import Runtime, ServeConfig, build_runtime, prepare
from forewarn.server.runtime import remembered
from forewarn.store import SQLiteStore, StoreError

T0 = 1_700_000_000.0

TWO_SCOPES = """
scopes:
  - {kind: availability_set, name: web, vms: 2}
  - {kind: standalone, name: solo}
"""


@pytest.fixture
def build(tmp_path: Path) -> Iterator[Callable[..., Runtime]]:
    """``build_runtime`` without a writer thread; every runtime is closed afterwards."""
    built: list[Runtime] = []

    def make(config: ServeConfig, clock: Clock | None = None) -> Runtime:
        runtime = build_runtime(config, clock=clock, threaded=False)
        built.append(runtime)
        return runtime

    yield make
    for runtime in built:
        runtime.close()


def fleet_file(tmp_path: Path, text: str = TWO_SCOPES, name: str = "fleet.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_runtime_serves_the_fleet_on_a_given_virtual_clock(
    tmp_path: Path, build: Callable[..., Runtime]
) -> None:
    config = ServeConfig(fleet=fleet_file(tmp_path), db=str(tmp_path / "a.db"), rate_limit=2)
    runtime = build(config, clock=Clock.virtual(start=T0))
    assert runtime.clock.now() == T0 and runtime.clock.is_virtual
    assert sorted(runtime.topology.vms) == ["solo", "web-0", "web-1"]
    assert runtime.endpoint.settings.rate_limit == 2
    assert runtime.cluster is None and runtime.recorder is None
    assert isinstance(runtime.store, SQLiteStore) and runtime.store.path == config.db
    # The given clock is the one the platform runs on: advancing it shows in the store.
    runtime.fabric.advance(60)
    assert runtime.store.clock_position() == T0 + 60


def test_a_rate_limit_of_zero_turns_the_limit_off(
    tmp_path: Path, build: Callable[..., Runtime]
) -> None:
    runtime = build(ServeConfig(db=str(tmp_path / "a.db"), rate_limit=0))
    assert runtime.endpoint.settings.rate_limit is None


def test_a_restart_with_only_the_database_keeps_fleet_clock_and_virtual_time(
    tmp_path: Path, build: Callable[..., Runtime]
) -> None:
    db = str(tmp_path / "kept.db")
    first = build(ServeConfig(fleet=fleet_file(tmp_path), db=db, clock="virtual", time_scale=60))
    assert first.config.clock == "virtual" and first.config.time_scale == 60
    assert first.store.stored_settings() == {"clock": "virtual", "time_scale": 60.0}
    moved_to = first.fabric.advance(3600)
    first.close()

    again = build(ServeConfig(db=db))
    assert again.config.clock == "virtual" and again.config.time_scale == 60
    assert again.clock.is_virtual and again.clock.now() == moved_to
    assert sorted(again.topology.vms) == ["solo", "web-0", "web-1"]


def test_the_flags_win_over_what_the_database_remembers(
    tmp_path: Path, build: Callable[..., Runtime]
) -> None:
    db = str(tmp_path / "kept.db")
    build(ServeConfig(db=db, clock="virtual", time_scale=60)).close()
    runtime = build(ServeConfig(db=db, clock="real", time_scale=2))
    assert runtime.config.clock == "real" and not runtime.clock.is_virtual
    assert runtime.store.stored_settings() == {"clock": "real", "time_scale": 2.0}


def test_a_different_fleet_for_a_database_is_refused_and_changes_nothing(
    tmp_path: Path, build: Callable[..., Runtime]
) -> None:
    db = str(tmp_path / "kept.db")
    build(ServeConfig(fleet=fleet_file(tmp_path), db=db)).close()
    other = fleet_file(tmp_path, "scopes: [{kind: standalone, name: other}]", "other.yaml")
    with pytest.raises(FleetError, match=r"kept\.db was created with a different fleet"):
        build(ServeConfig(fleet=other, db=db))
    runtime = build(ServeConfig(db=db))  # the database is released, and still the first fleet
    assert sorted(runtime.topology.vms) == ["solo", "web-0", "web-1"]


def test_preparing_creates_no_database(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    prepared = prepare(ServeConfig(fleet=fleet_file(tmp_path), db=str(db)))
    assert prepared.store is None and sorted(prepared.topology.vms) == ["solo", "web-0", "web-1"]
    assert not db.exists()


def test_a_database_in_a_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "nowhere" / "x.db"
    with pytest.raises(StoreError, match=r"directory .*nowhere does not exist"):
        build_runtime(ServeConfig(db=str(db)), threaded=False)
    assert not db.parent.exists()


def test_a_fleet_file_that_cannot_be_read_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FleetError, match=r"cannot read fleet file .*missing\.yaml"):
        build_runtime(ServeConfig(fleet=str(tmp_path / "missing.yaml"), db=str(tmp_path / "x.db")))
    broken = fleet_file(tmp_path, "scopes: [{kind: castle, name: x}]", "broken.yaml")
    with pytest.raises(FleetError, match=r"broken\.yaml"):
        build_runtime(ServeConfig(fleet=broken, db=str(tmp_path / "x.db")))
    assert os.listdir(tmp_path) == ["broken.yaml"]  # no database was created


def test_a_process_of_a_shared_fleet_must_run_the_fleets_clock() -> None:
    config = ServeConfig(store="postgresql://postgres@127.0.0.1/fleet", clock="real")
    with pytest.raises(StoreError, match="runs with --clock virtual; start every process"):
        remembered(config, {"clock": "virtual", "time_scale": 1.0})
    scaled = ServeConfig(store="postgresql://postgres@127.0.0.1/fleet", time_scale=3)
    with pytest.raises(StoreError, match=r"runs with --time-scale 1\.0"):
        remembered(scaled, {"clock": "real", "time_scale": 1.0})
    assert remembered(ServeConfig(store=config.store), {"clock": "virtual"}).clock == "virtual"


def test_a_single_database_may_change_its_clock_kind() -> None:
    changed = remembered(ServeConfig(clock="real"), {"clock": "virtual", "time_scale": 5})
    assert (changed.clock, changed.time_scale) == ("real", 5.0)
    assert remembered(ServeConfig(), {}).clock == "real"
