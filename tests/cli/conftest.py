"""Fixtures for the CLI tests: a real server, and the CLI run as a user runs it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support.cli import Cli, Result, run_cli
from tests.support.serverproc import VIRTUAL, ServerProcess


@pytest.fixture
def server(start_server: Callable[..., ServerProcess]) -> ServerProcess:
    """A server on a virtual clock with every scope enabled."""
    return start_server(VIRTUAL)


@pytest.fixture
def cli(server: ServerProcess) -> Cli:
    """Run the CLI against ``server``: ``cli("events", "--json")``."""

    def run(*args: str, columns: int = 200) -> Result:
        return run_cli(args, server.control_url, columns)

    return run
