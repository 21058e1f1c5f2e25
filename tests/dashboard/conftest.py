"""Fixtures of the dashboard tests (the scale-out ones start a fleet on PostgreSQL)."""

from tests.scaleout.conftest import pg, start_fleet

__all__ = ["pg", "start_fleet"]
