"""``--record FILE``: every request and answer of a run, in the JSON lines ``forewarn
replay`` plays.

Two kinds of line. A document line, as ``forewarn serve --record`` writes them (``t``,
``vm``, ``api_version``, ``incarnation``, ``body``), whenever a GET brings a Scheduled
Events document that differs from the last one of its api-version: ``forewarn replay``
serves these again. An exchange line for every request, whatever it was:
``{"t", "exchange": {"rule", "request": {method, target, headers, body}, "answer":
{status, headers, body} | "error"}}``, which replay skips and a person reads. Lines are
flushed as they are written, so a VM that reboots mid-run leaves what it saw.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qsl, urlsplit

import msgspec

from forewarn.conformance.rules import SCHEDULED
from forewarn.conformance.wire import Exchange
from forewarn.contract import DocumentFormatError, lookup_version, parse_document

__all__ = ["Recorder"]


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "replace")


class Recorder:
    """The ``on_exchange`` hook of a run's wire: appends lines to ``path``."""

    def __init__(self, path: str | Path, vm: Callable[[], str | None] = lambda: None) -> None:
        self.path = Path(path)
        #: The VM the endpoint took the kit for, once known (document lines name it).
        self.vm = vm
        self.written = 0
        #: Why writing stopped (a full disk), if it did: the run goes on.
        self.error: str | None = None
        self._last: dict[str, bytes] = {}
        self._file: IO[bytes] = self.path.open("wb")  # OSError: the caller names the path

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
        self._write({"t": round(exchange.t, 3), "exchange": line})
        document = self._document(exchange)
        if document is not None:
            self._write(document)

    def _document(self, exchange: Exchange) -> dict[str, Any] | None:
        answer = exchange.answer
        if answer is None or answer.status != 200 or exchange.method != "GET":
            return None
        parts = urlsplit(exchange.target)
        if parts.path.lower().rstrip("/") != SCHEDULED:
            return None
        version = {k.lower(): v for k, v in parse_qsl(parts.query)}.get("api-version", "")
        if lookup_version(version) is None or self._last.get(version) == answer.body:
            return None
        try:
            document = parse_document(answer.body)
            # one line, as served when it is one already (replay serves it byte for byte)
            body = answer.body.strip()
            if b"\n" in body or b"\r" in body:
                body = msgspec.json.format(body, indent=0)
        except (DocumentFormatError, msgspec.DecodeError, RecursionError):
            return None
        self._last[version] = answer.body
        line: dict[str, Any] = {"t": round(exchange.t, 3)}
        vm = self.vm()
        if vm:
            line["vm"] = vm
        line.update(api_version=version, incarnation=document.incarnation,
                    body=msgspec.Raw(body))  # fmt: skip
        return line

    def _write(self, line: dict[str, Any]) -> None:
        if self.error is not None:
            return
        try:
            self._file.write(msgspec.json.encode(line) + b"\n")
            self._file.flush()
        except OSError as exc:
            self.error = f"cannot write {self.path}: {exc.strerror or exc}"
            return
        self.written += 1

    def close(self) -> None:
        self._file.close()
