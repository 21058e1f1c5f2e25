"""Fixtures shared by every test package."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from tests.support.serverproc import ServerProcess


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    """Start ``forewarn serve`` processes; all are stopped after the test."""
    started: list[ServerProcess] = []

    def start(args: Sequence[str] = (), db: Path | None = None) -> ServerProcess:
        server = ServerProcess(db or tmp_path / "forewarn.db", args).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
