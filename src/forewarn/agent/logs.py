"""JSON log lines (structlog) on stderr, one event per line, for journald and log shippers."""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog

__all__ = ["configure_logging", "logger"]

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


def configure_logging(fmt: str = "json", level: str = "info", stream: TextIO | None = None) -> None:
    """Set structlog up for the process (the CLI calls this once)."""
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS[level]),
        logger_factory=structlog.PrintLoggerFactory(stream or sys.stderr),
        cache_logger_on_first_use=False,
    )


def logger(**bound: Any) -> Any:
    """A logger with ``bound`` fields on every line."""
    return structlog.get_logger("forewarn.agent").bind(**bound)
