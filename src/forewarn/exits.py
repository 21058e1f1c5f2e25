"""How a command ends in error: one ``forewarn: error:`` line on stderr and an exit code.

Click-free, so the VM commands' fast path (``forewarn.fastpath``) and the click group
(``forewarn.cli.errors``) end alike: the same line, the same code (2 for a usage mistake,
as click's; 1 for anything else).
"""

from __future__ import annotations

import sys
from typing import NoReturn

from forewarn.termtext import fit_error

__all__ = ["USAGE", "CommandError", "UsageProblem", "fail"]

#: The exit code of a usage mistake (click's).
USAGE = 2


class CommandError(Exception):
    """A command cannot do what was asked: its message is the error line's."""

    exit_code = 1


class UsageProblem(CommandError):
    """The arguments cannot be carried out as given."""

    exit_code = USAGE


def fail(message: str, code: int = 1, prefix: str = "forewarn") -> NoReturn:
    """Print the error (one line; wrapped on a terminal) and exit with ``code``."""
    sys.stdout.flush()
    sys.stderr.write(fit_error(f"{prefix}: error: {message}") + "\n")
    sys.stderr.flush()
    sys.exit(code)
