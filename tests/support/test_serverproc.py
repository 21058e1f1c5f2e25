"""The test servers' starter fails a server that hangs or exits before its banner, and
leaves no process behind."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tests.support.serverproc import ServerProcess


class _Silent(ServerProcess):
    """A "server" that prints nothing and never exits (as a hung start would)."""

    def command(self) -> list[str]:
        return [sys.executable, "-c", "import time; time.sleep(600)"]


class _Quits(ServerProcess):
    def command(self) -> list[str]:
        return [sys.executable, "-c", "print('no such option')"]


def test_a_server_silent_past_the_timeout_fails_its_start_and_is_killed(tmp_path: Path) -> None:
    server = _Silent(tmp_path / "db")
    began = time.monotonic()
    with pytest.raises(RuntimeError, match="did not start in 1"):
        server.start(timeout=1)
    assert time.monotonic() - began < 30
    assert server.proc is not None and server.proc.poll() is not None


def test_a_server_that_exits_before_its_banner_says_what_it_printed(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"exited early: \['no such option'\]"):
        _Quits(tmp_path / "db").start(timeout=30)
