"""The control API's HTTP connections: a client that stops reading is let go.

uvicorn's httptools protocol behind the API listeners' admission rules (a share of the
descriptors, a cap per address, deadlines for request heads: ``admission/guard.py``), with
two changes more. A connection that has bytes waiting for
its client while the client acknowledges none of them for ``WRITE_STALL_SECONDS`` is
aborted: a dashboard stream left open on a sleeping laptop, or read by nobody, holds no
descriptor, buffer or task for longer than that. (The kernel would otherwise take megabytes
of it before the process noticed anything.) And at shutdown a connection gets
``SHUTDOWN_GRACE`` seconds to take what it was sent, then is aborted: closing it politely
would wait for a flush that never comes.

Each request's scope also carries the connection's transport (``TRANSPORT_EXTENSION``):
a dashboard stream writes its messages straight to it (``dashboard/wire.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import socket
import struct
import sys
import termios

from forewarn.admission import GuardedProtocol

__all__ = ["SHUTDOWN_GRACE", "TRANSPORT_EXTENSION", "WRITE_STALL_SECONDS", "ControlProtocol"]

log = logging.getLogger(__name__)

#: Seconds a connection may have bytes waiting that its client does not acknowledge.
WRITE_STALL_SECONDS = 5.0
#: How often each connection's progress is looked at.
CHECK_SECONDS = 1.0
#: Seconds a connection gets at shutdown to take the bytes it was sent.
SHUTDOWN_GRACE = 1.0
#: The scope's ``extensions`` key under which ``{"transport": ...}`` is given.
TRANSPORT_EXTENSION = "forewarn.transport"

# Linux's struct tcp_info: tcpi_bytes_acked is the u64 at offset 120 (since 4.1).
_TCP_INFO_SIZE = 128
_BYTES_ACKED = struct.Struct("=Q")
_BYTES_ACKED_AT = 120


class ControlProtocol(GuardedProtocol):
    """One control-API connection (``uvicorn.Config(http=guarded(ControlProtocol, gate))``)."""

    _watch: asyncio.TimerHandle | None = None
    _acked = -1
    _since = 0.0

    def started(self) -> None:
        if sys.platform == "linux":
            self._since = self.loop.time()
            self._watch = self.loop.call_later(CHECK_SECONDS, self._check)

    def _unsupported_upgrade_warning(self) -> None:
        """Nothing: no route of the API is a WebSocket (the listener has none: ``ws="none"``),
        so an upgrade request is an HTTP request like another, answered as one, not two
        warnings a request asking to install a WebSocket library."""

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.scope["extensions"] = {TRANSPORT_EXTENSION: {"transport": self.transport}}

    def connection_lost(self, exc: Exception | None) -> None:
        self._unwatch()
        super().connection_lost(exc)

    def shutdown(self) -> None:
        """Stopping: close when the reply in flight is done, abort if its bytes stay unread."""
        super().shutdown()
        self._unwatch()
        if not self.http_started:
            return  # (closed already)
        self._watch = self.loop.call_later(SHUTDOWN_GRACE, self._abort_if_unsent)

    def _unwatch(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None

    def _check(self) -> None:
        """Abort when bytes wait and the client acknowledged none for the stall limit."""
        self._watch = None
        if self.transport.is_closing():
            return
        now = self.loop.time()
        progress = _progress(self.transport)
        if progress is not None:
            acked, waiting = progress
            if not waiting or acked != self._acked:
                self._acked, self._since = acked, now
            elif now - self._since >= WRITE_STALL_SECONDS:
                self._give_up()
                return
        self._watch = self.loop.call_later(CHECK_SECONDS, self._check)

    def _abort_if_unsent(self) -> None:
        self._watch = None
        progress = _progress(self.transport)
        if self.transport.get_write_buffer_size() > 0 or (progress is not None and progress[1]):
            self._give_up()

    def _give_up(self) -> None:
        client = self.client
        log.warning(
            "control API client %s stopped reading what it was sent; connection dropped",
            f"{client[0]}:{client[1]}" if client else "?",
        )
        self.transport.abort()


def _progress(transport: asyncio.Transport) -> tuple[int, bool] | None:
    """Bytes the client acknowledged so far, and whether any wait (in the process or in
    the kernel); None where the kernel does not say."""
    sock = transport.get_extra_info("socket")
    if sock is None or sys.platform != "linux":
        return None
    with contextlib.suppress(OSError, ValueError):
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_SIZE)
        if len(info) < _BYTES_ACKED_AT + _BYTES_ACKED.size:
            return None
        (acked,) = _BYTES_ACKED.unpack_from(info, _BYTES_ACKED_AT)
        queued = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
        waiting = transport.get_write_buffer_size() > 0 or struct.unpack("=i", queued)[0] > 0
        return acked, waiting
    return None
