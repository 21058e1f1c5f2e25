"""The ``forewarn`` command run as a user runs it (a subprocess, a terminal of a chosen
width, none of the caller's forewarn settings), and the checks of what the user saw."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "IDENTITY_VARIABLES",
    "Cli",
    "Result",
    "cli_env",
    "printed",
    "read_terminal",
    "run_cli",
    "run_cli_on_a_terminal",
]

#: Settings from the environment that would point a command somewhere the test did not.
IDENTITY_VARIABLES = ("FOREWARN_IMDS_URL", "SCHEDULEDEVENTSIP", "FOREWARN_CONTROL",
                      "FOREWARN_TOKEN")  # fmt: skip


@dataclass
class Result:
    """What a user sees of one CLI run."""

    code: int
    stdout: str
    stderr: str

    def assert_one_error_line(self, fragment: str = "") -> str:
        """Failed, with exactly one ``forewarn: error:`` line on stderr (wrapped to the
        terminal's width: its continuations indented) and no traceback; the line unwrapped."""
        assert self.code != 0, self.stdout
        assert "Traceback" not in self.stdout + self.stderr, self.stderr
        first, *more = self.stderr.splitlines() or [""]
        assert first.startswith("forewarn: error:"), self.stderr
        assert all(line.startswith("  ") for line in more), self.stderr
        line = " ".join([first, *(line.strip() for line in more)])
        assert fragment in line, line
        return line


Cli = Callable[..., Result]


def cli_env(extra: Mapping[str, str] | None = None, columns: int = 200) -> dict[str, str]:
    """This process's environment without forewarn's settings, ``columns`` wide, plus
    ``extra``."""
    env = {**os.environ, "COLUMNS": str(columns), "PYTHONUNBUFFERED": "1"}
    for name in IDENTITY_VARIABLES:
        env.pop(name, None)
    env.update(extra or {})
    return env


def run_cli_on_a_terminal(args: Sequence[str], columns: int = 80) -> Result:
    """``python -m forewarn ARGS`` with stderr on a terminal ``columns`` wide (where a
    person reads errors: they are wrapped there, and only there)."""
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "forewarn", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
        env=cli_env(columns=columns),
        text=True,
    )
    os.close(slave)
    screen = read_terminal(master)
    stdout = proc.stdout.read() if proc.stdout else ""
    code = proc.wait(timeout=60)
    return Result(code, stdout, screen.replace("\r\n", "\n"))


def read_terminal(master: int) -> str:
    """Everything written to a pty until its other end closes (then closes ``master``)."""
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the command is done with the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return b"".join(chunks).decode()


def run_cli(
    args: Sequence[str],
    control: str | None = None,
    columns: int = 200,
    *,
    env: Mapping[str, str] | None = None,
) -> Result:
    """``python -m forewarn [--control URL] ARGS`` to completion, in a terminal ``columns``
    wide."""
    prefix = ["--control", control] if control is not None else []
    proc = subprocess.run(
        [sys.executable, "-m", "forewarn", *prefix, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(env, columns),
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def printed(control: str, *args: str, columns: int = 120) -> str:
    """What ``forewarn --control URL ARGS`` printed; it must succeed."""
    result = run_cli(list(args), control, columns=columns)
    assert result.code == 0, result.stderr
    return result.stdout
