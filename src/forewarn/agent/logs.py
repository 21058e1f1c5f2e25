"""The agent's log lines on stderr, one event per line, for journald and log shippers.

``json`` (the default): one JSON object a line, the bound fields, the call's, then
``event``, ``level`` and ``timestamp`` (ISO 8601 UTC); what JSON cannot hold is written
as its ``repr``. ``console``: ``TIMESTAMP [level    ] event  key=value ...`` (the keys
sorted), for a person at a terminal. A logger asked for before ``configure_logging`` (an
agent run in a test's process) writes console lines of every level.
"""

from __future__ import annotations

import json
import sys
import threading
from datetime import UTC, datetime
from typing import Any, TextIO

__all__ = ["AgentLogger", "configure_logging", "logger"]

_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}


class _Sink:
    """Where lines go (None: the process's stderr at the time), how, and the least level
    written."""

    __slots__ = ("console", "level", "lock", "stream")

    def __init__(self, level: int, console: bool, stream: TextIO | None) -> None:
        self.level = level
        self.console = console
        self.stream = stream
        self.lock = threading.Lock()

    def write(self, text: str) -> None:
        with self.lock:
            stream = self.stream or sys.stderr
            stream.write(text)
            stream.flush()


_sink = _Sink(0, True, None)


def _timestamp() -> str:
    return datetime.now(tz=UTC).isoformat().replace("+00:00", "Z")


def _console(line: dict[str, Any]) -> str:
    event, level, stamp = line.pop("event"), line.pop("level"), line.pop("timestamp")
    pairs = " ".join(
        f"{key}={value if isinstance(value, str) else repr(value)}"
        for key, value in sorted(line.items())
    )
    return f"{stamp} [{level:<9}] {event:<30} {pairs}".rstrip() + "\n"


class AgentLogger:
    """``bind``, ``debug``, ``info``, ``warning`` and ``error``, each writing one line (or
    nothing below the configured level)."""

    __slots__ = ("_context", "_sink")

    def __init__(self, sink: _Sink, context: dict[str, Any]) -> None:
        self._sink = sink
        self._context = context

    def bind(self, **fields: Any) -> AgentLogger:
        """A logger with ``fields`` added to this one's on every line."""
        return AgentLogger(self._sink, {**self._context, **fields})

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
        line["timestamp"] = _timestamp()
        sink.write(_console(line) if sink.console else json.dumps(line, default=repr) + "\n")


def configure_logging(fmt: str = "json", level: str = "info", stream: TextIO | None = None) -> None:
    """Set the process's agent logs up (the CLI calls this once): ``json`` or ``console``
    lines of ``level`` and above, to ``stream`` (default: stderr)."""
    global _sink
    _sink = _Sink(_LEVELS[level], fmt == "console", stream or sys.stderr)


def logger(**bound: Any) -> AgentLogger:
    """A logger with ``bound`` fields on every line."""
    return AgentLogger(_sink, bound)
