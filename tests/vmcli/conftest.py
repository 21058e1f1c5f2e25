"""Fixtures of the VM command tests: a real ``forewarn serve`` and the CLI as a subprocess,
run the way a person on a VM runs it (no control API unless a test says so)."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

import pytest

from tests.support.cli import cli_env
from tests.support.serverproc import VIRTUAL, ServerProcess

#: Source addresses of demo-fleet VMs (assigned in fleet order).
WEB0, WEB1, WEB2 = "127.1.0.1", "127.1.0.2", "127.1.0.3"


class Running:
    """A long-running command (``forewarn watch``) whose lines are read as they come."""

    def __init__(self, args: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "forewarn", *args], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=cli_env(env),
        )  # fmt: skip
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        stdout = self.proc.stdout
        assert stdout is not None

        def pump() -> None:
            for line in stdout:
                self.lines.put(line.rstrip("\n"))

        threading.Thread(target=pump, daemon=True).start()

    def expect(self, fragment: str, timeout: float = 30.0) -> str:
        """The next line containing ``fragment`` (lines before it are kept in ``seen``)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no line with {fragment!r} in {timeout}s; saw {self.seen}")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            self.seen.append(line)
            if fragment in line:
                return line

    def interrupt(self) -> tuple[int, str]:
        """Ctrl-C; the exit code and stderr."""
        self.proc.send_signal(signal.SIGINT)
        _, stderr = self.proc.communicate(timeout=30)
        return self.proc.returncode, stderr

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


@pytest.fixture
def server(start_server: Callable[..., ServerProcess]) -> ServerProcess:
    """``forewarn serve``: demo fleet, virtual clock, every scope on, no rate limit."""
    return start_server(VIRTUAL)


@pytest.fixture
def running() -> Iterator[Callable[..., Running]]:
    started: list[Running] = []

    def start(*args: str, env: Mapping[str, str] | None = None) -> Running:
        started.append(Running(args, env))
        return started[-1]

    yield start
    for proc in started:
        proc.kill()
