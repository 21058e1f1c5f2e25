"""Every ``serve --OPTION`` the README or a command's help names is an option ``forewarn
serve`` has: a reader who copies it gets the server they read about, not "No such option"."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click

from forewarn.cli import main

README = Path(__file__).parents[2] / "README.md"
#: ``serve`` then the rest of its command: up to the end of a code span, a comment, a
#: shell operator or the line.
SERVE = re.compile(r"\bserve\b([^`#&;|\n]*)")


def serve_options(text: str) -> set[str]:
    """The options written after each ``serve`` in ``text``."""
    return {
        token.split("=")[0].rstrip(".,)")
        for match in SERVE.finditer(text)
        for token in match.group(1).split()
        if token.startswith("--")
    }


def commands(group: click.Group, ctx: click.Context) -> Iterator[click.Command]:
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        yield command
        if isinstance(command, click.Group):
            yield from commands(command, click.Context(command, parent=ctx))


def help_texts() -> Iterator[tuple[str, str]]:
    ctx = click.Context(main)
    for command in commands(main, ctx):
        yield f"{command.name}", command.help or ""
        for param in command.params:
            if isinstance(param, click.Option) and param.help:
                yield f"{command.name} {param.opts[0]}", param.help


def real_options() -> set[str]:
    serve = main.get_command(click.Context(main), "serve")
    assert serve is not None
    return {opt for p in serve.params for opt in (*p.opts, *p.secondary_opts)}


def test_the_readme_names_only_options_serve_has() -> None:
    named = serve_options(README.read_text())
    assert "--time-scale" in named  # the check reads what it should
    assert named - real_options() == set()


def test_help_names_only_options_serve_has() -> None:
    real = real_options()
    wrong = {where: serve_options(text) - real for where, text in help_texts()}
    assert {where: named for where, named in wrong.items() if named} == {}
