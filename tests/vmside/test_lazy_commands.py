"""The lazy ``forewarn`` command lists and helps exactly as the commands it imports."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Callable

import click
import pytest

from forewarn.cli import COMMANDS
from tests.vmside.conftest import Command


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_summary_is_the_commands_own(name: str) -> None:
    lazy = COMMANDS[name]
    command = lazy.load()
    assert command.name == name
    stand_in = click.Command(name, help=lazy.summary)
    for limit in (12, 30, 45, 62, 200):
        assert stand_in.get_short_help_str(limit) == command.get_short_help_str(limit), limit


EAGER_HELP = """
import click
from forewarn.cli import COMMANDS, main
context = click.Context(main)
assert all(main.get_command(context, name) is not None for name in COMMANDS)
assert set(main.commands) == set(COMMANDS)  # every command is now the real one
main(args=["--help"], prog_name="forewarn")
"""


@pytest.mark.parametrize("columns", ["50", "80", "200"])
def test_help_without_imports_is_the_help_with_every_command_loaded(columns: str) -> None:
    env = {**os.environ, "COLUMNS": columns}
    run = functools.partial(subprocess.run, capture_output=True, text=True, env=env, timeout=60)
    lazy = run([sys.executable, "-m", "forewarn", "--help"])
    eager = run([sys.executable, "-c", EAGER_HELP])
    assert (lazy.returncode, eager.returncode) == (0, 0), lazy.stderr + eager.stderr
    assert lazy.stdout == eager.stdout
    assert "trigger      Start OPERATION on TARGET" in lazy.stdout


def test_an_unknown_command_is_one_error_line(forewarn: Callable[..., Command]) -> None:
    ran = forewarn("serv").wait()
    assert ran.code == 2
    assert ran.stderr.strip().splitlines() == ["forewarn: error: No such command 'serv'."]
    assert ran.emulator == []
