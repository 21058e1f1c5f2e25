"""Writing the documents a real endpoint served, in the JSON lines ``forewarn replay`` reads.

One line per document whose incarnation or body changed: ``t`` (POSIX seconds), ``vm``
(when known), ``api_version``, ``incarnation`` and ``body`` (the bytes served, made one
line). Captured on a production VM, replayed against staging. A write that fails (a full
disk) is kept in ``error`` and the watch goes on: recording never stops the watching.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from forewarn.contract import Document

__all__ = ["DocumentRecorder"]


class DocumentRecorder:
    """The ``on_document`` hook of a watch: appends each new document to ``path``."""

    def __init__(
        self,
        path: str | Path,
        api_version: str,
        vm: str | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path)
        self.api_version = api_version
        self.vm = vm
        self.error: str | None = None
        self.written = 0
        self._now = now
        self._last: tuple[int, bytes] | None = None
        self._file = self.path.open("ab")  # OSError here: the caller says the path is bad

    def __call__(self, document: Document, body: bytes) -> None:
        """Record ``body`` (as served) unless it is the document recorded last."""
        if self._last == (document.incarnation, body):
            return
        line: dict[str, object] = {"t": round(self._now(), 3)}
        if self.vm:
            line["vm"] = self.vm
        line["api_version"] = self.api_version
        line["incarnation"] = document.incarnation
        line["body"] = msgspec.Raw(msgspec.json.format(body, indent=0))
        try:
            self._file.write(msgspec.json.encode(line) + b"\n")
            self._file.flush()
        except OSError as exc:
            self.error = f"cannot write {self.path}: {exc.strerror or exc}"
            return
        self._last = (document.incarnation, body)
        self.written += 1
        self.error = None

    def close(self) -> None:
        """Close the file (what was written is flushed already)."""
        self._file.close()
