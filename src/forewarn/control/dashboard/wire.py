"""A dashboard stream written straight to its connection.

On forewarn's own control listener (``ControlProtocol``) a stream's response head goes
through the ASGI server as any other; its messages then go to the connection's transport
directly, each framed as an HTTP chunk once for every stream. Through the ASGI server a
message cost each of 300 streams a task woken, an async generator resumed and five
``send`` wrappers (some 30 µs, the endpoint's loop waiting); written here it is one
``transport.write`` (``bench/dashboard_streams.py``).

A stream that needs a snapshot (its first message, or after a reload) keeps what comes
meanwhile and writes it after the snapshot. A stream whose connection holds more than
``BEHIND_BYTES`` beyond its last snapshot unsent is too far behind: the hub ends it, its
browser reconnects. (A client that takes nothing at all is dropped by the listener.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from functools import lru_cache
from typing import Any, cast

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from forewarn.control.dashboard.hub import RELOAD, Hub
from forewarn.control.listener import TRANSPORT_EXTENSION

__all__ = ["BEHIND_BYTES", "WireResponse", "WireStream", "wire_transport"]

log = logging.getLogger(__name__)

#: Bytes a stream's connection may hold unsent beyond its last snapshot.
BEHIND_BYTES = 4 * 1024 * 1024
#: Messages a stream keeps while its snapshot is built (then it is too far behind).
HELD_LIMIT = 2000
#: What a stream's first write starts with: browsers reconnect after a second.
RETRY = b"retry: 1000\n\n"

#: Builds the snapshot event for a stream that asked when the hub had published so many.
Snapshots = Callable[[int], Awaitable[bytes]]


def wire_transport(scope: Scope) -> asyncio.WriteTransport | None:
    """The connection a ``GET`` may write its stream to, when the listener gives it."""
    if scope.get("method") != "GET":
        return None  # a HEAD's answer has no body
    given = (scope.get("extensions") or {}).get(TRANSPORT_EXTENSION) or {}
    transport = given.get("transport")  # uvloop's transports are no asyncio.WriteTransport
    return cast(asyncio.WriteTransport, transport) if hasattr(transport, "write") else None


@lru_cache(maxsize=4)
def chunk(message: bytes) -> bytes:
    """``message`` as one HTTP/1.1 chunk (the same batch is framed once for every stream:
    bytes keep their hash, and the cache finds the very object first)."""
    return b"%x\r\n%b\r\n" % (len(message), message)


class WireStream:
    """One stream as the hub's subscriber, writing to its connection."""

    def __init__(self, transport: asyncio.WriteTransport, hub: Hub, snapshots: Snapshots) -> None:
        self._transport = transport
        self._hub = hub
        self._snapshots = snapshots
        self._first = True
        #: Messages waiting for the snapshot being built (None: none is being built).
        self._held: list[bytes] | None = None
        self._building: asyncio.Task[None] | None = None
        self._allowance = BEHIND_BYTES
        #: Set when the stream is over (the server stops, it fell behind, a build failed).
        self.ended = asyncio.Event()

    def start(self) -> None:
        """Send a snapshot, then every message delivered from now on (call once attached)."""
        self._snapshot()

    def deliver(self, message: bytes) -> bool:
        if message is RELOAD:
            self._snapshot()
            return True
        if self._held is not None:
            self._held.append(message)
            return len(self._held) <= HELD_LIMIT
        if self._transport.is_closing():
            return True  # gone: its response sees the disconnect and detaches it
        if self._transport.get_write_buffer_size() > self._allowance:
            return False
        self._transport.write(chunk(message))
        return True

    def end(self) -> None:
        self.cancel()
        self.ended.set()

    def cancel(self) -> None:
        """Stop building a snapshot (the stream is over)."""
        if self._building is not None:
            self._building.cancel()
            self._building = None

    def _snapshot(self) -> None:
        """Build a snapshot as of now (what was held is in it), then write it and what
        arrives meanwhile."""
        self.cancel()  # a build begun earlier may miss what the reload brought
        self._held = []
        self._building = asyncio.get_running_loop().create_task(
            self._write_snapshot(self._hub.published)
        )

    async def _write_snapshot(self, since: int) -> None:
        try:
            event = await self._snapshots(since)
        except Exception:
            log.exception("building a dashboard snapshot failed; the stream is ended")
            self._hub.unsubscribe(self)
            self.ended.set()
            return
        held, self._held, self._building = self._held or [], None, None
        if self._first:
            event, self._first = RETRY + event, False
        if self._transport.is_closing():
            return
        self._allowance = BEHIND_BYTES + self._transport.get_write_buffer_size() + len(event)
        self._transport.write(b"".join([chunk(event), *map(chunk, held)]))


class WireResponse(StreamingResponse):
    """The stream's response: its head through the ASGI server (the middleware sees it),
    its messages written by a ``WireStream``, its end through the server again."""

    def __init__(
        self, transport: asyncio.WriteTransport, hub: Hub, snapshots: Snapshots, **kw: Any
    ) -> None:
        super().__init__(iter(()), **kw)
        self._stream = WireStream(transport, hub, snapshots)
        self._hub = hub

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code,
                    "headers": self.raw_headers})  # fmt: skip
        stream = self._stream
        self._hub.attach(stream)  # before the snapshot: no change falls in between
        stream.start()
        gone = asyncio.ensure_future(_disconnected(receive))
        ended = asyncio.ensure_future(stream.ended.wait())
        try:
            await asyncio.wait({gone, ended}, return_when=asyncio.FIRST_COMPLETED)
            connected = not gone.done()
        finally:
            self._hub.unsubscribe(stream)
            stream.cancel()
            for task in (gone, ended):
                task.cancel()
        if connected:  # ended by the server: the last chunk says so
            with contextlib.suppress(OSError):
                await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
