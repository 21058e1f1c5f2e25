"""Fixtures shared by every test package."""

from __future__ import annotations

import shutil
import tempfile
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


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A fresh directory with a short path (``/tmp/fw-XXXXXXXX``), for a test whose output
    shows a path within 80 columns: ``tmp_path`` grows with the test's name and, under
    pytest-xdist, with the worker's (``popen-gw1/``), so such a line would not fit."""
    path = Path(tempfile.mkdtemp(prefix="fw-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)
