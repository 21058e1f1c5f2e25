"""The emulator's lazy click group lists and helps exactly as the commands it imports."""

from __future__ import annotations

from collections.abc import Callable

import click
import pytest

from forewarn.cli import COMMANDS
from forewarn.cli.lazy_group import load
from tests.vmside.conftest import Command


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_summary_is_the_commands_own(name: str) -> None:
    lazy = COMMANDS[name]
    command = load(lazy)
    assert command.name == name
    stand_in = click.Command(name, help=lazy.summary)
    for limit in (12, 30, 45, 62, 200):
        assert stand_in.get_short_help_str(limit) == command.get_short_help_str(limit), limit


def test_an_unknown_command_is_one_error_line(forewarn: Callable[..., Command]) -> None:
    ran = forewarn("serv").wait()
    assert ran.code == 2
    assert ran.stderr.strip().splitlines() == ["forewarn: error: No such command 'serv'."]
    assert ran.emulator == []
