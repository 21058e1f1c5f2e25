"""JSON log lines (structlog) on stderr, one event per line, for journald and log shippers."""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO


def _import_structlog() -> Any:
    """structlog, imported as if rich were not installed.

    structlog looks for rich at import, for pretty tracebacks in its console renderer;
    the agent prints plain ones, and rich is ~5 MB and 80 modules of every VM's agent
    (the VM install has it, for the VM commands' tables)."""
    hide = "rich" not in sys.modules
    if hide:
        sys.modules["rich"] = None  # type: ignore[assignment]  # import rich: ImportError
    try:
        import structlog
    finally:
        if hide:
            del sys.modules["rich"]
    return structlog


structlog = _import_structlog()

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
