"""How a command ends in error: one ``forewarn: error:`` message on stderr and an exit
code: 2 for a usage mistake (argparse's and click's), 1 for anything else. The VM commands
and the emulator's click group end alike; a VM command's message is wrapped to the
output's width wherever it goes, the emulator's on a terminal only (its logs keep a line).
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

from forewarn.vm.text import fit, stderr_terminal_width

__all__ = ["USAGE", "CommandError", "UsageProblem", "closed_pipe", "fail"]

#: The exit code of a usage mistake.
USAGE = 2


class CommandError(Exception):
    """A command cannot do what was asked: its message is the error's."""

    exit_code = 1


class UsageProblem(CommandError):
    """The arguments cannot be carried out as given."""

    exit_code = USAGE


def fail(
    message: str, code: int = 1, prefix: str = "forewarn", *, terminal_only: bool = False
) -> NoReturn:
    """Print the error (wrapped to the output's width; if ``terminal_only``, to a terminal's
    only) and exit with ``code``."""
    sys.stdout.flush()
    text = f"{prefix}: error: {message}"
    width = stderr_terminal_width() if terminal_only else None
    if not terminal_only or width is not None:
        text = fit(text, width)
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
    sys.exit(code)


def closed_pipe() -> NoReturn:
    """End quietly (status 1) when standard output was closed (``| head``), as a filter
    does: nothing more is written to it, not even at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(1)
