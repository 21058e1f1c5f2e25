"""Run the ``forewarn`` command the way a VM runs it and see which modules it loaded.

Each command runs in its own Python process through ``WRAPPER``, which calls the click
entry point with the given arguments and, however the command ends, writes the names in
``sys.modules`` to a file.
"""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.cli import cli_env
from tests.support.serverproc import VIRTUAL, ServerProcess

REPO = Path(__file__).resolve().parents[2]
AGENT_EXAMPLE = REPO / "examples" / "agent" / "agent.toml"
WEB0 = "127.1.0.1"  # the demo fleet's first VM (web-0) speaks from this address

#: Packages of the emulator, and the emulator's own commands in the CLI.
EMULATOR_PACKAGES = (
    "forewarn.fleet", "forewarn.fabric", "forewarn.store", "forewarn.rehearsal",
    "forewarn.imds", "forewarn.control", "forewarn.scenarios", "forewarn.server",
    "forewarn.replay", "forewarn.testing", "forewarn.cli.serve", "forewarn.cli.fleet",
    "forewarn.cli.replay", "forewarn.cli.scenario", "forewarn.cli.report",
    "forewarn.cli.trigger", "forewarn.cli.dashboard_scenarios",
)  # fmt: skip
#: Distributions of the ``server`` extra (and the database drivers), by import name.
EMULATOR_LIBRARIES = ("starlette", "uvicorn", "uvloop", "httptools", "jinja2", "yaml",
                      "psycopg", "psycopg_pool", "redis", "watchfiles", "websockets")  # fmt: skip

#: ``forewarn ARGS`` as the console script runs it (``forewarn.script``: the version and
#: the fast path without click), or with ``click`` in ``sys.argv[1]``, through the click
#: group alone.
WRAPPER = """
import json, os, sys
try:
    if sys.argv[1] == "click":
        from forewarn.cli import main
        main(args=sys.argv[2:], prog_name="forewarn")
    else:
        from forewarn.script import main
        del sys.argv[1]
        main(prog_name="forewarn")
finally:
    with open(os.environ["FOREWARN_TEST_MODULES"], "w") as out:
        json.dump(sorted(sys.modules), out)
"""


def emulator_modules(modules: Sequence[str]) -> list[str]:
    """The modules of ``modules`` that belong to the emulator or its libraries."""
    return sorted(
        name for name in modules
        if name.split(".")[0] in EMULATOR_LIBRARIES
        or any(name == p or name.startswith(p + ".") for p in EMULATOR_PACKAGES)
    )  # fmt: skip


def command_env(modules_file: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    return cli_env({"NO_COLOR": "1", "FOREWARN_TEST_MODULES": str(modules_file), **(extra or {})})


@dataclass
class Ran:
    """How a command ended, what it printed and which modules its process loaded."""

    code: int
    stdout: str
    stderr: str
    modules: list[str] = field(default_factory=list)

    @property
    def emulator(self) -> list[str]:
        return emulator_modules(self.modules)


class Command:
    """``forewarn ARGS`` in a process of its own, through ``WRAPPER`` (``via``: "script",
    the console script, or "click", the click group alone)."""

    def __init__(
        self, args: Sequence[str], workdir: Path, python: str = sys.executable,
        via: str = "script", env: Mapping[str, str] | None = None,
    ) -> None:  # fmt: skip
        self.modules_file = workdir / f"modules-{time.monotonic_ns()}.json"
        self.proc = subprocess.Popen(
            [python, "-c", WRAPPER, via, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=command_env(self.modules_file, env), cwd=workdir,
        )  # fmt: skip
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self._stderr: list[str] = []
        stdout, stderr = self.proc.stdout, self.proc.stderr
        assert stdout is not None and stderr is not None

        def pump(stream: Iterator[str], keep: list[str]) -> None:
            for line in stream:
                keep.append(line)
                self.lines.put(line.rstrip("\n"))

        self._stdout: list[str] = []
        self._threads = [
            threading.Thread(target=pump, args=(stdout, self._stdout), daemon=True),
            threading.Thread(target=pump, args=(stderr, self._stderr), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def expect(self, fragment: str, timeout: float = 60.0) -> str:
        """The next line (stdout or stderr) holding ``fragment``."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            self.seen.append(line)
            if fragment in line:
                return line
        raise AssertionError(f"no line with {fragment!r} in {timeout}s; saw {self.seen}")

    def stop(self, sig: int = signal.SIGINT) -> Ran:
        """Send ``sig`` (Ctrl-C by default), then wait as ``wait`` does."""
        self.proc.send_signal(sig)
        return self.wait()

    def wait(self, timeout: float = 120.0) -> Ran:
        code = self.proc.wait(timeout=timeout)
        for thread in self._threads:
            thread.join(timeout=10)
        modules = json.loads(self.modules_file.read_text()) if self.modules_file.exists() else []
        return Ran(code, "".join(self._stdout), "".join(self._stderr), modules)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


@pytest.fixture
def forewarn(tmp_path: Path) -> Iterator[Callable[..., Command]]:
    """Start ``forewarn ARGS`` commands (this venv's Python unless ``python=``; the console
    script unless ``via="click"``; ``env``: variables added)."""
    started: list[Command] = []

    def start(
        *args: str, python: str = sys.executable, via: str = "script",
        env: Mapping[str, str] | None = None,
    ) -> Command:  # fmt: skip
        started.append(Command(args, tmp_path, python, via, env))
        return started[-1]

    yield start
    for command in started:
        command.kill()


@pytest.fixture
def server(start_server: Callable[..., ServerProcess]) -> ServerProcess:
    """``forewarn serve``: demo fleet, virtual clock, every scope on, no rate limit."""
    return start_server(VIRTUAL)


AGENT_CONFIG = """
vm_name = "web-0"
poll_interval = 0.2
metrics_bind = ""
shutdown = "abandon"

[[rules]]
name = "reboot"
event_types = ["Reboot"]
approval = "after-handlers"
"""
