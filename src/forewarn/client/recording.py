"""Writing the documents a real endpoint served, in the JSON lines ``forewarn replay`` reads.

One line per document whose incarnation or body changed: ``t`` (POSIX seconds), ``vm``
(when known), ``api_version``, ``incarnation`` and ``body`` (the bytes served, made one
line). Captured on a production VM, replayed against staging. A write that fails (a full
disk) is kept in ``error`` and the watch goes on: recording never stops the watching.
``forewarn conformance --record`` writes its own lines between these (``JsonLines``).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from forewarn.contract import Document

__all__ = ["DocumentRecorder", "JsonLines"]


class JsonLines:
    """JSON lines written to ``path``, each with one unbuffered write (a VM that reboots
    leaves whole lines). A failed write is kept in ``error``, takes back what it wrote of
    its line, and the next one is tried again."""

    def __init__(self, path: str | Path, *, truncate: bool = False) -> None:
        self.path = Path(path)
        self.error: str | None = None
        # OSError here: the caller says the path is bad
        self._file = self.path.open("wb" if truncate else "ab", buffering=0)

    def write(self, line: Mapping[str, object]) -> bool:
        """Append ``line``; False (and ``error`` says why) when it could not be."""
        data = memoryview(_line(line) + b"\n")
        start, size = self._file.tell(), len(data)
        try:
            while data:
                data = data[self._file.write(data) :]
        except OSError as exc:
            self.error = f"cannot write {self.path}: {exc.strerror or exc}"
            if len(data) < size:  # half a line: the next would not parse
                with contextlib.suppress(OSError):
                    os.ftruncate(self._file.fileno(), start)
                    self._file.seek(start)
            return False
        self.error = None
        return True

    def close(self) -> None:
        """Close the file (nothing is held back: every line was written at once)."""
        self._file.close()


class RawJSON(bytes):
    """JSON text written into a line as it is (a document's bytes as served)."""


def _line(line: Mapping[str, object]) -> bytes:
    """``line`` as compact JSON, its ``RawJSON`` values written as they are."""
    raw = {key: value for key, value in line.items() if isinstance(value, RawJSON)}
    if not raw:
        return _compact(line)
    head = _compact({k: v for k, v in line.items() if k not in raw})[:-1]
    parts = [b"%s:%s" % (_compact(key), value) for key, value in raw.items()]
    return head + (b"," if len(head) > 1 else b"") + b",".join(parts) + b"}"


def _compact(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _one_line(body: bytes) -> RawJSON:
    """``body`` as served when it is one line already (replay serves it byte for byte),
    else made one (a line holds one document)."""
    body = body.strip()
    if b"\n" in body or b"\r" in body:
        body = json.dumps(json.loads(body), ensure_ascii=False).encode()
    return RawJSON(body)


class DocumentRecorder:
    """The ``on_document`` hook of a watch: appends each new document to ``path`` (or to
    ``JsonLines`` another writer shares)."""

    def __init__(
        self,
        path: str | Path | JsonLines,
        api_version: str,
        vm: str | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.lines = path if isinstance(path, JsonLines) else JsonLines(path)
        self.path = self.lines.path
        self.api_version = api_version
        self.vm = vm
        self.written = 0
        self._now = now
        self._last: tuple[int, bytes] | None = None

    @property
    def error(self) -> str | None:
        """Why the last write failed (a full disk), or None."""
        return self.lines.error

    def __call__(self, document: Document, body: bytes) -> None:
        """Record ``body`` (as served) unless it is the document recorded last."""
        if self._last == (document.incarnation, body):
            return
        line: dict[str, object] = {"t": round(self._now(), 3)}
        if self.vm:
            line["vm"] = self.vm
        line["api_version"] = self.api_version
        line["incarnation"] = document.incarnation
        line["body"] = _one_line(body)
        if self.lines.write(line):
            self._last = (document.incarnation, body)
            self.written += 1

    def close(self) -> None:
        """Close the file (what was written is flushed already)."""
        self.lines.close()
