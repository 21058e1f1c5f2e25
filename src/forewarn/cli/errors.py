"""How the CLI fails: one ``forewarn: error:`` line on stderr and a non-zero exit.

A user's mistake is never a traceback; every command funnels its errors through here.
"""

from __future__ import annotations

import math
import sys
from typing import Any, NoReturn

import click

from forewarn.controlapi.errors import ControlError
from forewarn.vm import exits
from forewarn.vm.exits import CommandError, closed_pipe

__all__ = ["OneLineErrors", "fail", "finite"]


def fail(message: str, code: int = 1) -> NoReturn:
    """The emulator's error: one line, wrapped on a terminal only."""
    exits.fail(message, code, terminal_only=True)


def finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """Refuse nan and inf, which no duration can be."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a number of seconds")
    return value


class OneLineErrors(click.Group):
    """Usage mistakes and failed control API calls end as one ``forewarn: error:`` line,
    like every other error."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except click.UsageError as exc:
            fail(exc.format_message(), exc.exit_code)
        except click.ClickException as exc:
            fail(exc.format_message(), exc.exit_code)
        except CommandError as exc:  # a VM-side function's
            fail(str(exc), exc.exit_code)
        except click.Abort:
            fail("aborted")
        except BrokenPipeError:
            closed_pipe()
        except ControlError as exc:  # the control API's message is already one line
            fail(str(exc))
        sys.exit(code if isinstance(code, int) else 0)
