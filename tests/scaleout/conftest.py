"""Fixtures of the scale-out tests: a fresh PostgreSQL database per test."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from tests.scaleout.fleet import Fleet
from tests.scaleout.pg import PgDatabase, pg_database

#: Every scope on from the start, a virtual clock, no rate limit (the tests poll).
VIRTUAL = ("--clock", "virtual", "--rate-limit", "0", "--enablement", "always")


@pytest.fixture
def pg() -> Iterator[PgDatabase]:
    """A new, empty database on the local PostgreSQL server, dropped afterwards."""
    yield from pg_database()


@pytest.fixture
def start_fleet(pg: PgDatabase, tmp_path: Path) -> Iterator[Callable[..., Fleet]]:
    """Start ``count`` ``forewarn serve`` processes on the test's database."""
    fleets: list[Fleet] = []

    def start(count: int = 3, args: Sequence[str] = VIRTUAL) -> Fleet:
        fleet = Fleet(tmp_path, pg.url, count, args)
        fleets.append(fleet)
        return fleet.start()

    yield start
    for fleet in fleets:
        fleet.stop()
