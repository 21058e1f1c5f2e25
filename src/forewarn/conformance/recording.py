"""``--record FILE``: every request and answer of a run, in the JSON lines ``forewarn
replay`` plays.

Two kinds of line. A document line, the client's (``DocumentRecorder``: ``t``, ``vm``,
``api_version``, ``incarnation``, ``body``), whenever a GET brings a Scheduled Events
document that differs from the last one of its api-version: ``forewarn replay`` serves
these again. An exchange line for every request, whatever it was: ``{"t", "exchange":
{"rule", "request": {method, target, headers, body}, "answer": {status, headers, body} |
"error"}}``, which replay skips and a person reads. Lines are flushed as they are
written, so a VM that reboots mid-run leaves what it saw.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from forewarn.client.recording import DocumentRecorder, JsonLines
from forewarn.conformance.session import document_version
from forewarn.conformance.wire import Exchange
from forewarn.contract import DocumentFormatError, parse_document

__all__ = ["Recorder"]


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "replace")


class Recorder:
    """The ``on_exchange`` hook of a run's wire: appends lines to ``path``."""

    def __init__(self, path: str | Path, vm: Callable[[], str | None] = lambda: None) -> None:
        self._lines = JsonLines(path, truncate=True)  # OSError: the caller names the path
        #: The VM the endpoint took the kit for, once known (document lines name it).
        self.vm = vm
        #: Why a write failed (a full disk), if one did: the run goes on.
        self.error: str | None = None
        self._documents: dict[str, DocumentRecorder] = {}

    def __call__(self, exchange: Exchange) -> None:
        request: dict[str, Any] = {
            "method": exchange.method,
            "target": exchange.target,
            "headers": [list(h) for h in exchange.headers],
            "body": _text(exchange.body),
        }
        line: dict[str, Any] = {"rule": exchange.rule, "request": request}
        answer = exchange.answer
        if answer is None:
            line["error"] = exchange.error
        else:
            line["answer"] = {"status": answer.status,
                              "headers": [list(h) for h in answer.headers],
                              "body": _text(answer.body)}  # fmt: skip
        self._lines.write({"t": round(exchange.t, 3), "exchange": line})
        self.error = self.error or self._lines.error
        version = document_version(exchange)
        if version is None or answer is None:
            return
        try:
            document = parse_document(answer.body)
        except DocumentFormatError:
            return
        recorder = self._documents.setdefault(version, DocumentRecorder(self._lines, version))
        recorder.vm = self.vm()
        recorder(document, answer.body)
        self.error = self.error or self._lines.error

    def close(self) -> None:
        self._lines.close()
