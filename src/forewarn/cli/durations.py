"""The CLI's duration options: what a person types (``90``, ``90s``, ``5m``, ``1h``,
``PT5M``), read by the one parser scenario files and the control API use
(``forewarn.contract.durations``); anything else is a usage error naming the option."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from forewarn.contract.durations import parse_duration

__all__ = ["DURATION", "DurationType"]


if TYPE_CHECKING:  # generic in click 8.2+, plain before
    _ParamType = click.ParamType[float]
else:
    _ParamType = click.ParamType


class DurationType(_ParamType):
    """Seconds, from a number or a duration (``5m``, ``1h30m``, ``PT5M``)."""

    name = "duration"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, float):
            return value
        try:
            return parse_duration(value, "duration")
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


#: A duration option's type: seconds as a float.
DURATION = DurationType()
