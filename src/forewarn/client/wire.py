"""The async twin's transport: the client's HTTP/1.1 (``http1``) on asyncio.

The agent runs on every VM and mostly asks an unchanged document once a second: deciding
"nothing changed" (a 304) is a few hundred microseconds on a kept-alive connection. An
https:// endpoint's connections go over the standard library's ssl (imported then only).

The connection is dropped after any failure, a ``Connection: close`` or an HTTP/1.0
answer; a GET that finds its kept-alive connection closed by the server meanwhile (no
byte of answer) is sent once more on a new one, as httpx's pool does.
"""

from __future__ import annotations

import asyncio
from typing import Any

from forewarn.client.core import Answer, RequestSpec, Settings
from forewarn.client.http1 import ProtocolError, Response, request_bytes
from forewarn.client.origin import http_origin
from forewarn.client.transport import failure

__all__ = ["AsyncWire", "ProtocolError"]

#: Kept-alive connections held between requests.
MAX_IDLE = 2


class _Connection(asyncio.Protocol):
    """One TCP connection; hands received bytes to the response being read."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.response: Response | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.error: BaseException | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        response = self.response
        if response is None or response.done:
            self.error = ProtocolError("the server sent bytes no request asked for")
            self.close()
            return
        try:
            response.feed(data)
        except ProtocolError as exc:
            self.error = exc
            self.close()
        self._wake()

    def eof_received(self) -> bool | None:
        return None  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        response = self.response
        if response is not None and response.started and not response.done and not self.error:
            try:
                response.eof()
            except ProtocolError as broken:
                self.error = exc or broken
        self._wake()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            response = self.response
            if self.error is not None or self.closed or (response is not None and response.done):
                waiter.set_result(None)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class AsyncWire:
    """Requests to one endpoint on kept-alive connections (the async twin's I/O): a poll
    and an approval may be under way at once, each on a connection of its own."""

    def __init__(self, base: str, local_address: str | None = None) -> None:
        self.host, self.port, self.authority, tls = http_origin(base)
        self.local_address = local_address
        self._idle: list[_Connection] = []
        self._ssl: Any = None
        if tls:
            import ssl

            self._ssl = ssl.create_default_context()

    async def _connect(self, timeout: float) -> _Connection:
        loop = asyncio.get_running_loop()
        local = (self.local_address, 0) if self.local_address else None
        async with asyncio.timeout(timeout):
            _, connection = await loop.create_connection(
                _Connection, self.host, self.port, local_addr=local, ssl=self._ssl
            )
        return connection

    async def send_async(self, spec: RequestSpec, settings: Settings) -> Answer:
        """Send ``spec``; the answer (``transport``'s rules when none came)."""
        payload, url = request_bytes(spec, self.authority)
        try:
            response = await self._exchange(payload, spec, settings)
        except (OSError, ProtocolError) as exc:
            raise failure(url, exc) from None
        return Answer(response.status, response.headers, bytes(response.body), url)

    def _take_idle(self) -> _Connection | None:
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed:
                return connection
        return None

    async def _exchange(self, payload: bytes, spec: RequestSpec, settings: Settings) -> Response:
        connection = self._take_idle()
        reused = connection is not None
        if connection is None:
            connection = await self._connect(settings.timeout)
        response = await self._once(connection, payload, spec, settings)
        if response is None and reused and spec.method == "GET":
            connection = await self._connect(settings.timeout)
            response = await self._once(connection, payload, spec, settings)
        if response is None:
            raise ProtocolError("the server closed the connection before answering")
        if response.keep_alive and len(self._idle) < MAX_IDLE:
            self._idle.append(connection)
        else:
            connection.close()
        return response

    async def _once(
        self, connection: _Connection, payload: bytes, spec: RequestSpec, settings: Settings
    ) -> Response | None:
        """The response, or None when the connection closed before its first byte."""
        response = Response(head_only=spec.method == "HEAD")
        connection.response = response
        connection.error = None
        waiter = connection.waiter = asyncio.get_running_loop().create_future()
        assert connection.transport is not None
        try:
            connection.transport.write(payload)
            async with asyncio.timeout(settings.read_timeout()):
                await waiter
        finally:
            connection.waiter = None
            if not response.done:  # failed, timed out or cancelled: never reused
                connection.close()
        if response.done:
            return response
        if not response.started and connection.error is None:
            return None
        raise ProtocolError(str(connection.error or "the connection closed mid-answer"))

    def close(self) -> None:
        """Close the idle connections (a request under way closes its own)."""
        for connection in self._idle:
            connection.close()
        self._idle.clear()
