"""The agent's log lines on stderr, one event per line, for journald and log shippers.

``json`` (the default) is written here: the line structlog's JSONRenderer wrote after
``add_log_level`` and an ISO UTC ``TimeStamper``, byte for byte (the bound fields, the
call's, then ``event``, ``level``, ``timestamp``; what JSON cannot hold as its ``repr``),
without structlog's thirty modules: ~0.6 MB of every VM's idle agent. ``console`` is
structlog's ``ConsoleRenderer``, imported then; so is structlog's default, for a logger
asked for before ``configure_logging`` (an agent run in a test's process).
"""

from __future__ import annotations

import json
import sys
import threading
from datetime import UTC, datetime
from typing import Any, TextIO

__all__ = ["JsonLogger", "configure_logging", "logger"]

_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}


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


class _Sink:
    """Where JSON lines go, and the least level written."""

    __slots__ = ("level", "lock", "stream")

    def __init__(self, level: int, stream: TextIO) -> None:
        self.level = level
        self.stream = stream
        self.lock = threading.Lock()


#: The JSON lines' sink once ``configure_logging("json")`` ran; None: structlog's.
_sink: _Sink | None = None


def _fallback(value: Any) -> Any:
    """What JSON cannot hold: its ``__structlog__()``, else its ``repr`` (structlog's)."""
    render = getattr(value, "__structlog__", None)
    return render() if callable(render) else repr(value)


class JsonLogger:
    """``bind``, ``debug``, ``info``, ``warning`` and ``error`` as structlog's bound logger
    has them, each writing one JSON line (or nothing below the configured level)."""

    __slots__ = ("_context", "_sink")

    def __init__(self, sink: _Sink, context: dict[str, Any]) -> None:
        self._sink = sink
        self._context = context

    def bind(self, **fields: Any) -> JsonLogger:
        """A logger with ``fields`` added to this one's on every line."""
        return JsonLogger(self._sink, {**self._context, **fields})

    def debug(self, event: str, **fields: Any) -> None:
        self._write(10, "debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._write(20, "info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._write(30, "warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._write(40, "error", event, fields)

    def _write(self, level: int, name: str, event: str, fields: dict[str, Any]) -> None:
        sink = self._sink
        if level < sink.level:
            return
        line = {**self._context, **fields}
        line["event"] = event
        line["level"] = name
        line["timestamp"] = datetime.now(tz=UTC).isoformat().replace("+00:00", "Z")
        text = json.dumps(line, default=_fallback) + "\n"
        with sink.lock:
            sink.stream.write(text)
            sink.stream.flush()


def configure_logging(fmt: str = "json", level: str = "info", stream: TextIO | None = None) -> None:
    """Set the process's agent logs up (the CLI calls this once)."""
    global _sink
    threshold = _LEVELS[level]
    if fmt == "json":
        _sink = _Sink(threshold, stream or sys.stderr)
        return
    _sink = None
    structlog = _import_structlog()
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(threshold),
        logger_factory=structlog.PrintLoggerFactory(stream or sys.stderr),
        cache_logger_on_first_use=False,
    )


def logger(**bound: Any) -> Any:
    """A logger with ``bound`` fields on every line."""
    if _sink is not None:
        return JsonLogger(_sink, bound)
    return _import_structlog().get_logger("forewarn.agent").bind(**bound)
