"""Fixtures of the dashboard tests: the browser, and a fleet on PostgreSQL for the
scale-out ones."""

from tests.dashboard.browser import browser
from tests.scaleout.conftest import pg, start_fleet

__all__ = ["browser", "pg", "start_fleet"]
