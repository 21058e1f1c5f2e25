"""Recording what every VM was served (``forewarn serve --record FILE``), as JSON lines.

A fleet of 10,000 VMs polling once a second asks 10,000 times a second for documents that
rarely change, so a line is written only when the document a VM is served changes (a new
incarnation, or another api-version), plus a count of how often it got the previous one:

    {"t": 1764110836.5, "vm": "web-0", "api_version": "2020-07-01", "incarnation": 2,
     "body": {"DocumentIncarnation": 2, "Events": [...]}}
    {"t": 1764110901.0, "vm": "web-0", "api_version": "2020-07-01", "incarnation": 2,
     "served": 65}

A line with ``body`` is a document, first served to that VM at ``t`` (platform time: a
virtual clock's time under ``--clock virtual``); a line with ``served`` says how many
times the VM was served that document (304s included) up to ``t``, written when its
document changes and when the recorder closes. ``forewarn replay`` plays the documents.

``served`` runs on the endpoint's hot path when recording (``RecordingCache``): a dict
look-up and an identity check (the document cache hands out one reply object per scope,
incarnation and api-version); without recording the endpoint does not call it at all. The
file is written by a thread of its own, so the event loop never waits for the disk; if the
disk cannot keep up, lines are dropped and counted rather than held without bound.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

import msgspec

from forewarn.contract import ApiVersion
from forewarn.fabric import ScopeView
from forewarn.fleet import VM
from forewarn.imds.cache import DocumentCache
from forewarn.imds.messages import Reply

__all__ = ["DocumentRecorder", "RecordError", "RecordingCache", "check_record_path"]

log = logging.getLogger(__name__)

#: Lines waiting for the writer before new ones are dropped (a stuck disk must not grow
#: the server's memory without bound).
MAX_QUEUED = 100_000

_STOP = object()


class RecordError(OSError):
    """The record file cannot be opened for writing (the message names it)."""


def check_record_path(path: str | Path) -> None:
    """Raise RecordError unless ``path`` can be recorded to, creating nothing (a server
    checks this before it creates its database, so a failed start leaves no file)."""
    target = Path(path)
    if target.is_dir():
        raise RecordError(f"cannot record to {path}: it is a directory")
    parent = target.parent
    if not parent.is_dir():
        raise RecordError(f"cannot record to {path}: there is no directory {parent}")
    if not os.access(target if target.exists() else parent, os.W_OK):
        raise RecordError(f"cannot record to {path}: permission denied")


class _Document(msgspec.Struct):
    t: float
    vm: str
    api_version: str
    incarnation: int
    body: msgspec.Raw


class _Count(msgspec.Struct):
    t: float
    vm: str
    api_version: str
    incarnation: int
    served: int


class _Seen:
    """What one VM was served last, and how many times."""

    __slots__ = ("api_version", "count", "incarnation", "reply")

    def __init__(self, reply: Reply, api_version: str, incarnation: int) -> None:
        self.reply = reply
        self.count = 1
        self.api_version = api_version
        self.incarnation = incarnation

    def counted(self, at: float, vm: str) -> _Count:
        return _Count(at, vm, self.api_version, self.incarnation, self.count)


class DocumentRecorder:
    """Appends the documents served to VMs to ``path``, one JSON line per change.

    ``now`` is the platform clock (the fabric's), so recorded times are the times VMs
    lived through, virtual or real.
    """

    def __init__(self, path: str | Path, now: Callable[[], float]) -> None:
        self.path = Path(path)
        self._now = now
        try:
            self._file: IO[bytes] = self.path.open("ab")
        except OSError as exc:
            raise RecordError(f"cannot record to {path}: {exc.strerror or exc}") from None
        self._last: dict[str, _Seen] = {}
        self._queue: queue.Queue[object] = queue.Queue(MAX_QUEUED)
        self.dropped = 0
        self.written = 0
        self._closed = False
        self._thread = threading.Thread(target=self._write, name="forewarn-record", daemon=True)
        self._thread.start()

    def served(self, vm: str, api_version: str, incarnation: int, reply: Reply) -> None:
        """``vm`` is being served ``reply`` (the document cache's object) for ``api_version``."""
        last = self._last.get(vm)
        if last is not None and last.reply is reply:
            last.count += 1
            return
        now = self._now()
        if last is not None:
            self._put(last.counted(now, vm))
        self._last[vm] = _Seen(reply, api_version, incarnation)
        self._put(_Document(now, vm, api_version, incarnation, msgspec.Raw(reply.body)))

    def _put(self, line: msgspec.Struct) -> None:
        try:
            self._queue.put_nowait(line)
        except queue.Full:
            self.dropped += 1

    def _write(self) -> None:
        """The writer thread: encode and append lines; flush whenever the queue is empty."""
        encoder = msgspec.json.Encoder()
        failed = False
        while True:
            line = self._queue.get()
            if line is _STOP:
                break
            try:
                self._file.write(encoder.encode(line) + b"\n")
                self.written += 1
                if self._queue.empty():
                    self._file.flush()
            except OSError as exc:
                if not failed:  # once: a full disk would otherwise log 10,000 lines
                    log.error("recording to %s failed: %s; lines are lost", self.path, exc)
                failed = True
                self.dropped += 1
        with contextlib.suppress(OSError):
            self._file.flush()

    def close(self) -> None:
        """Write every VM's count, then everything queued, and close the file."""
        if self._closed:
            return
        self._closed = True
        now = self._now()
        for vm, last in self._last.items():
            self._put(last.counted(now, vm))
        self._queue.put(_STOP)
        self._thread.join()
        with contextlib.suppress(OSError):
            self._file.close()
        if self.dropped:
            log.warning("recording to %s dropped %d lines", self.path, self.dropped)


class RecordingCache(DocumentCache):
    """The endpoint's document cache, telling ``recorder`` what each VM is served.

    The endpoint uses it instead of a plain ``DocumentCache`` only when recording, so a
    server that does not record runs exactly the code it ran before.
    """

    __slots__ = ("_recorder",)

    def __init__(self, recorder: DocumentRecorder) -> None:
        super().__init__()
        self._recorder = recorder

    def reply(self, view: ScopeView, vm: VM, version: ApiVersion) -> Reply:
        reply = super().reply(view, vm, version)
        self._recorder.served(vm.name, version.name, view.incarnation, reply)
        return reply
