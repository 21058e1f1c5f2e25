"""Fixtures shared by every test package."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from xdist.scheduler import LoadFileScheduling

from tests.support.serverproc import ServerProcess

if TYPE_CHECKING:
    from xdist.remote import Producer
    from xdist.scheduler.protocol import Scheduling


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


#: Tests that pytest-xdist hands out one at a time, not with the rest of their file (the
#: docs' pages: each runs a page's servers for seconds, so pages spread over the workers).
ONE_BY_ONE = ("tests/docs/test_shell_examples.py::test_the_page_s_shell_examples_run[",)


def work_unit(nodeid: str) -> str:
    """The unit of work pytest-xdist hands a test out with: its file (``--dist loadfile``:
    a file's tests on one worker, its module fixtures set up once), or for a test that
    :data:`ONE_BY_ONE` names, the test alone."""
    return nodeid if nodeid.startswith(ONE_BY_ONE) else nodeid.split("::", 1)[0]


class LoadFileButPages(LoadFileScheduling):
    """xdist's ``--dist loadfile`` scheduler, its units of work those of :func:`work_unit`."""

    def _split_scope(self, nodeid: str) -> str:
        return work_unit(nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> Scheduling | None:
    """The scheduler of ``--dist loadfile`` (pyproject's addopts), with the docs' pages
    one by one; another ``--dist`` is xdist's own."""
    return LoadFileButPages(config, log) if config.getvalue("dist") == "loadfile" else None
