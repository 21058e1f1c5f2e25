"""Fixtures for the CLI tests: a real server, and the CLI run as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest

from tests.serverproc import ServerProcess

VIRTUAL = ["--clock", "virtual", "--enablement", "always"]


@dataclass
class Result:
    """What a user sees of one CLI run."""

    code: int
    stdout: str
    stderr: str

    def assert_one_error_line(self, fragment: str = "") -> str:
        """Failed, with exactly one ``forewarn: error:`` line on stderr and no traceback."""
        assert self.code != 0, self.stdout
        assert "Traceback" not in self.stdout + self.stderr, self.stderr
        lines = self.stderr.splitlines()
        assert len(lines) == 1, self.stderr
        assert lines[0].startswith("forewarn: error: "), self.stderr
        assert fragment in lines[0]
        return lines[0]


Cli = Callable[..., Result]


def run_cli(args: Sequence[str], control: str | None, columns: int = 200) -> Result:
    """``python -m forewarn [--control URL] ARGS`` in a terminal ``columns`` wide."""
    env = {**os.environ, "COLUMNS": str(columns)}
    env.pop("FOREWARN_CONTROL", None)
    env.pop("FOREWARN_TOKEN", None)
    prefix = ["--control", control] if control is not None else []
    proc = subprocess.run(
        [sys.executable, "-m", "forewarn", *prefix, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


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
