"""A lean HTTP/1.1 exchange on asyncio for the endpoint, the async twin's default.

The agent runs on every VM and mostly asks an unchanged document once a second: through
httpx that poll cost ~4 ms of CPU and the import ~10 MB, where deciding "nothing changed"
(a 304) is a few hundred microseconds. The endpoint is plain HTTP on a link-local address
(no proxy, no TLS, no redirects, no compression), so one kept-alive connection, a request
written in one piece and a response read by Content-Length (or chunks, or to the close)
is all it takes. A custom httpx transport still goes through httpx (``exchange``).

The connection is dropped after any failure, a ``Connection: close`` or an HTTP/1.0
answer; a GET that finds its kept-alive connection closed by the server meanwhile (no
byte of answer) is sent once more on a new one, as httpx's pool does.
"""

from __future__ import annotations

import asyncio

from forewarn.client.core import Answer, RequestSpec, Settings, settle
from forewarn.client.errors import EndpointTimeout
from forewarn.client.origin import USER_AGENT, http_origin, request_target, unreachable

__all__ = ["AsyncWire", "ProtocolError"]

#: Bounds on what the endpoint may send: a document of 10,000 events is ~3 MB.
MAX_HEAD = 64 * 1024
MAX_BODY = 256 * 1024 * 1024
#: Kept-alive connections held between requests.
MAX_IDLE = 2


class ProtocolError(Exception):
    """The peer's bytes are not an HTTP/1.1 response (or the connection ended mid-way)."""


class _Response:
    """One response, parsed as its bytes arrive (``feed``); ``done`` once complete."""

    def __init__(self, head_only: bool) -> None:
        self.head_only = head_only
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body = bytearray()
        self.keep_alive = True
        self.done = False
        self.started = False
        self._buffer = bytearray()
        self._length: int | None = None  # the body's length; None: to the close
        self._chunked = False
        self._in_head = True

    def feed(self, data: bytes) -> None:
        self.started = True
        self._buffer += data
        if self._in_head and not self._head():
            return
        if not self._in_head:
            self._body()

    def eof(self) -> None:
        """The peer closed: complete when the body runs to the close, else broken."""
        if not self._in_head and self._length is None and not self._chunked:
            self.body += self._buffer
            self._buffer.clear()
            self.keep_alive = False
            self.done = True
        if not self.done:
            raise ProtocolError("the server closed the connection before a whole answer")

    def _head(self) -> bool:
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buffer) > MAX_HEAD:
                raise ProtocolError("response head too long")
            return False
        lines = bytes(self._buffer[:end]).decode("latin-1").split("\r\n")
        del self._buffer[: end + 4]
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or not code.isdigit():
            raise ProtocolError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
        self.status = int(code)
        if 100 <= self.status < 200:  # an interim answer: the real one follows
            return self._head()
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise ProtocolError(f"malformed header line: {line[:80]!r}")
            self.headers[name.strip().lower()] = value.strip()
        connection = self.headers.get("connection", "").lower()
        self.keep_alive = version == "HTTP/1.1" and "close" not in connection
        self._in_head = False
        if self.head_only or self.status in (204, 304):
            self._length = 0
        elif "chunked" in self.headers.get("transfer-encoding", "").lower():
            self._chunked = True
        elif "content-length" in self.headers:
            value = self.headers["content-length"]
            if not value.isdigit() or int(value) > MAX_BODY:
                raise ProtocolError(f"bad Content-Length {value[:40]!r}")
            self._length = int(value)
        else:
            self.keep_alive = False
        return True

    def _body(self) -> None:
        if self._chunked:
            self._chunks()
        elif self._length is not None and len(self._buffer) >= self._length:
            self.body += self._buffer[: self._length]
            self._buffer.clear()
            self.done = True
        elif len(self._buffer) > MAX_BODY:
            raise ProtocolError("response body too long")

    def _chunks(self) -> None:
        while True:
            end = self._buffer.find(b"\r\n")
            if end < 0:
                return
            size_text = bytes(self._buffer[:end]).split(b";")[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise ProtocolError(f"bad chunk size {size_text[:20]!r}") from None
            if size == 0:  # the last chunk, then trailers up to an empty line
                trailer_end = self._buffer.find(b"\r\n\r\n", end)
                if trailer_end < 0:
                    return
                self._buffer.clear()
                self.done = True
                return
            if len(self._buffer) < end + 2 + size + 2:
                return
            self.body += self._buffer[end + 2 : end + 2 + size]
            del self._buffer[: end + 2 + size + 2]
            if len(self.body) > MAX_BODY:
                raise ProtocolError("response body too long")


class _Connection(asyncio.Protocol):
    """One TCP connection; hands received bytes to the response being read."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.response: _Response | None = None
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
        self.host, self.port, self.authority = http_origin(base)
        self.local_address = local_address
        self._idle: list[_Connection] = []

    async def _connect(self, timeout: float) -> _Connection:
        loop = asyncio.get_running_loop()
        local = (self.local_address, 0) if self.local_address else None
        async with asyncio.timeout(timeout):
            _, connection = await loop.create_connection(
                _Connection, self.host, self.port, local_addr=local
            )
        return connection

    def _request_bytes(self, spec: RequestSpec) -> tuple[bytes, str]:
        target, url = request_target(spec, self.authority)
        lines = [f"{spec.method} {target} HTTP/1.1", f"Host: {self.authority}",
                 "Accept: */*", f"User-Agent: {USER_AGENT}"]  # fmt: skip
        lines += [f"{name}: {value}" for name, value in spec.headers.items()]
        content = spec.content
        if content is not None or spec.method in ("POST", "PUT"):
            lines.append(f"Content-Length: {len(content or b'')}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        return head + (content or b""), url

    async def request(self, spec: RequestSpec, settings: Settings) -> Answer:
        """Send ``spec``; the answer (raises ``Transient`` when it is worth another try,
        ``EndpointTimeout`` when none came in time)."""
        payload, url = self._request_bytes(spec)
        try:
            response = await self._exchange(payload, spec, settings)
        except TimeoutError:
            raise EndpointTimeout(f"{url} did not answer in time", url=url) from None
        except (OSError, ProtocolError) as exc:
            raise unreachable(url, exc) from None
        answer = Answer(response.status, response.headers, bytes(response.body), url)
        return settle(settings, answer)

    def _take_idle(self) -> _Connection | None:
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed:
                return connection
        return None

    async def _exchange(self, payload: bytes, spec: RequestSpec, settings: Settings) -> _Response:
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
    ) -> _Response | None:
        """The response, or None when the connection closed before its first byte."""
        response = _Response(head_only=spec.method == "HEAD")
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
