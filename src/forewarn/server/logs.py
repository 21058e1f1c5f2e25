"""Where ``forewarn serve`` logs go and how they look.

Console lines are for a person at a terminal: they are coloured only when the stream is a
terminal and ``NO_COLOR`` is unset (https://no-color.org), so a log redirected to a file
holds plain text. JSON lines are for machines. The level drops what is below it, in our own
logs and in the libraries' alike.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, Literal, TextIO

import structlog

__all__ = ["LOG_LEVELS", "LogLevel", "configure_logging", "wants_colour"]

LogLevel = Literal["debug", "info", "warning", "error"]
LOG_LEVELS: tuple[LogLevel, ...] = ("debug", "info", "warning", "error")


def wants_colour(stream: TextIO) -> bool:
    """Colour only for a terminal, and never when ``NO_COLOR`` is set to anything."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


def configure_logging(fmt: str, level: str = "info", stream: TextIO | None = None) -> None:
    """structlog to ``stream`` (stderr), as console lines or JSON, from ``level`` up."""
    out = stream if stream is not None else sys.stderr
    if level not in LOG_LEVELS:
        raise ValueError(f"log level {level!r} is not one of {', '.join(LOG_LEVELS)}")
    threshold = logging.getLevelNamesMapping()[level.upper()]
    renderer: Any
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer()
    else:
        plain: dict[str, Any] = {}
        if not wants_colour(out):  # the default (rich) traceback is coloured regardless
            plain = {"colors": False, "exception_formatter": structlog.dev.plain_traceback}
        renderer = structlog.dev.ConsoleRenderer(**plain)
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(threshold),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(level=logging.WARNING, stream=out)
    logging.getLogger().setLevel(max(threshold, logging.WARNING))  # libraries: warnings up
