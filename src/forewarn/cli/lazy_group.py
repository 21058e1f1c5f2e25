"""A click group that imports a command's module only when that command runs.

Each command is named by ``module:attribute`` with the line ``forewarn --help`` lists it
with (``forewarn.cli.COMMANDS``), and imported on demand (click's documented LazyGroup). A
command whose libraries the install lacks ends in one message that says which extra to
install.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from gettext import gettext

import click

from forewarn.cli.commands import LazyCommand, lacking
from forewarn.cli.errors import OneLineErrors

__all__ = ["LazyGroup", "load"]


def load(lazy: LazyCommand) -> click.Command:
    """The click command ``lazy`` names, its module imported."""
    module_name, _, attribute = lazy.target.partition(":")
    command = getattr(importlib.import_module(module_name), attribute)
    assert isinstance(command, click.Command), lazy.target
    return command


class LazyGroup(OneLineErrors):
    """A group of ``LazyCommand``: listing and help import nothing, running imports one."""

    def __init__(
        self, *args: object, lazy_commands: Mapping[str, LazyCommand], **kwargs: object
    ) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy_commands = dict(lazy_commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        lazy = self.lazy_commands.get(cmd_name)
        if command is not None or lazy is None:
            return command
        try:
            command = load(lazy)
        except ModuleNotFoundError as exc:
            missing = (exc.name or "").partition(".")[0]
            if lazy.extra is None or missing in ("", "forewarn"):
                raise
            raise click.ClickException(lacking(cmd_name, missing, lazy.extra)) from None
        self.add_command(command, cmd_name)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their summaries, as click lists them, without importing any."""
        commands: list[tuple[str, click.Command]] = []
        for name in self.list_commands(ctx):
            command = self.commands.get(name) or _summary_only(name, self.lazy_commands[name])
            if not command.hidden:
                commands.append((name, command))
        if not commands:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in commands)
        with formatter.section(gettext("Commands")):
            formatter.write_dl([(name, c.get_short_help_str(limit)) for name, c in commands])


def _summary_only(name: str, lazy: LazyCommand) -> click.Command:
    """A stand-in that ``--help`` lists as click lists the real command."""
    return click.Command(name, help=lazy.summary)
