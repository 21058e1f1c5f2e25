"""A lean HTTP/1.1 server for the endpoint: httptools parsing straight into ``Endpoint``.

Why not uvicorn here: the endpoint's hot path is a cached byte string, so per-request
framework overhead dominates; this protocol is a few hundred lines less and several times
faster on the same machine (see ``bench/imds_throughput.py``). It keeps what clients rely
on: keep-alive and pipelining in order, ``Connection: close`` on every response after
which the server closes, absolute-form request lines, back-pressure, and an idle timeout
long enough that clients always close idle connections first.
"""

from __future__ import annotations

import asyncio
import socket
from collections import deque
from dataclasses import replace
from email.utils import formatdate
from http import HTTPStatus

import httptools

from ..contract import error_body
from ..fabric import wall_time
from .endpoint import MAX_BODY, RULE_HEADERS, TOO_LARGE, Endpoint
from .messages import Reply, Request

__all__ = ["serve_endpoint"]

IDLE_TIMEOUT = 300.0
MAX_HEAD = 64 * 1024
ENCODER_CACHE_BYTES = 16 * 1024 * 1024
IDLE_SWEEP = 30.0

_STATUS_LINES = {s.value: f"HTTP/1.1 {s.value} {s.phrase}\r\n".encode() for s in HTTPStatus}
_MALFORMED = error_body("Malformed request")
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_HEAD_TOO_LARGE = Reply(431, error_body("Request header fields too large"))
_BAD_REQUEST = (
    b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json; charset=utf-8\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(_MALFORMED), _MALFORMED)
)


class _DateHeader:
    """``date: ...\\r\\n``, formatted once per second."""

    __slots__ = ("_line", "second")

    def __init__(self) -> None:
        self.second = 0
        self._line = b""
        self.line()

    def line(self) -> bytes:
        now = int(wall_time())
        if now != self.second:
            self.second = now
            self._line = b"date: " + formatdate(now, usegmt=True).encode() + b"\r\n"
        return self._line


class _Encoder:
    """Status line + date + the rest, where the rest is cached per Reply object.

    Cached documents and error replies are the same Reply objects request after request,
    so the framing is built once. Entries hold their Reply, so an id is never reused while
    its entry lives; the cache is bounded in bytes.
    """

    __slots__ = ("_bytes", "_date", "_rest")

    def __init__(self, date: _DateHeader) -> None:
        self._date = date
        self._bytes = 0
        self._rest: dict[tuple[int, bool], tuple[Reply, bytes]] = {}

    def encode(self, reply: Reply, close: bool) -> bytes:
        key = (id(reply), close)
        entry = self._rest.get(key)
        if entry is None or entry[0] is not reply:
            rest = _rest(reply, close)
            if self._bytes + len(rest) > ENCODER_CACHE_BYTES or len(self._rest) >= 4096:
                self._rest.clear()
                self._bytes = 0
            self._rest[key] = (reply, rest)
            self._bytes += len(rest)
        else:
            rest = entry[1]
        return _STATUS_LINES[reply.status] + self._date.line() + rest


def _rest(reply: Reply, close: bool) -> bytes:
    parts = [b"content-type: ", reply.content_type, b"\r\n"]
    for name, value in reply.headers:
        parts += (name, b": ", value, b"\r\n")
    if reply.status != 304:
        parts.append(b"content-length: %d\r\n" % len(reply.body))
    if close:
        parts.append(b"connection: close\r\n")
    parts.append(b"\r\n")
    if reply.status != 304:
        parts.append(reply.body)
    return b"".join(parts)


class _Connection(asyncio.Protocol):
    """One client connection: parse, hand to the endpoint, write replies in order."""

    def __init__(
        self, endpoint: Endpoint, encoder: _Encoder, date: _DateHeader, live: set[_Connection]
    ) -> None:
        self._endpoint = endpoint
        self._encoder = encoder
        self._date = date
        self._live = live
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._client: str | None = None
        self._local_port: int | None = None
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self._body_size = 0
        self._held: deque[tuple[float, bytes, bool]] = deque()
        self._release_timer: asyncio.TimerHandle | None = None
        self._closing = False  # the transport is closed or closing
        self._finished = False  # a last reply (connection: close) is sent or queued
        self._eof = False  # the client half-closed; close once held replies are out
        self._in_head = True  # between the start of a request and the end of its headers
        self._head_bytes = 0  # bytes read while in a request head (bounds its memory)
        self._write_paused = False
        self._expect_continue = False
        self.last_active = 0.0

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass
        peer = transport.get_extra_info("peername")
        local = transport.get_extra_info("sockname")
        self._client = peer[0] if isinstance(peer, tuple) else None
        self._local_port = local[1] if isinstance(local, tuple) else None
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._live.add(self)
        self.last_active = self._date.second

    def connection_lost(self, exc: Exception | None) -> None:
        self._live.discard(self)
        self._closing = True
        if self._release_timer is not None:
            self._release_timer.cancel()

    def data_received(self, data: bytes) -> None:
        self.last_active = self._date.second
        while data and not self._finished:
            if self._in_head:
                self._head_bytes += len(data)
            try:
                self._parser.feed_data(data)
                data = b""
            except httptools.HttpParserUpgrade as upgrade:
                # The request was answered; HTTP lets a server ignore Upgrade (curl --http2
                # sends one), so read on with a fresh parser from where the request ended.
                offset = upgrade.args[0] if upgrade.args else len(data)
                self._parser = httptools.HttpRequestParser(self)
                data = data[offset:]
            except httptools.HttpParserError:
                self._send(_BAD_REQUEST, close=True)
                return
        if self._in_head and self._head_bytes > MAX_HEAD:
            self._send(self._encoder.encode(_HEAD_TOO_LARGE, True), close=True)

    def eof_received(self) -> bool:
        """A half-close still gets the replies that are held back; then we close."""
        self._eof = True
        return bool(self._held)

    def pause_writing(self) -> None:
        self._write_paused = True
        if self._transport is not None:
            self._transport.pause_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._transport is not None and not self._closing and not self._held:
            self._transport.resume_reading()

    # -- httptools callbacks
    def on_message_begin(self) -> None:
        self._in_head = True
        self._url = b""
        self._headers = []
        self._body = []
        self._body_size = 0

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name in RULE_HEADERS:  # the endpoint looks at no other header
            self._headers.append((name, value))
        elif name == b"expect" and value.strip().lower() == b"100-continue":
            self._expect_continue = True

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_bytes = 0
        if self._expect_continue:
            self._expect_continue = False
            if not self._held and not self._finished and self._transport is not None:
                self._transport.write(_CONTINUE)  # don't make PowerShell and curl wait

    def on_body(self, body: bytes) -> None:
        self._body_size += len(body)
        if self._body_size <= MAX_BODY:
            self._body.append(body)

    def on_message_complete(self) -> None:
        if self._finished or self._closing:
            return
        try:
            url = httptools.parse_url(self._url)
        except httptools.HttpParserInvalidURLError:
            self._send(_BAD_REQUEST, close=True)
            return
        self._in_head = True
        method = self._parser.get_method().decode("latin-1")
        if self._body_size > MAX_BODY:
            reply = TOO_LARGE
        else:
            reply = self._endpoint.handle(
                Request(
                    method=method,
                    path=url.path.decode("latin-1"),
                    query=url.query or b"",
                    headers=self._headers,
                    client=self._client,
                    local_port=self._local_port,
                    body=b"".join(self._body),
                )
            )
        if method == "HEAD":
            reply = replace(reply, body=b"")  # a HEAD answer never has a body
        close = not self._parser.should_keep_alive()
        self._send(self._encoder.encode(reply, close), close=close, delay=reply.delay)

    # -- internals
    def _send(self, data: bytes, *, close: bool, delay: float = 0.0) -> None:
        """Write now, or behind replies that are held back, keeping request order."""
        if close:
            self._finished = True
        if delay > 0 or self._held:
            self._hold(delay, data, close)
        else:
            self._write(data, close)

    def _write(self, data: bytes, close: bool) -> None:
        transport = self._transport
        if transport is None or self._closing:
            return
        transport.write(data)
        if close:
            self._closing = True
            transport.close()

    def _hold(self, delay: float, data: bytes, close: bool) -> None:
        """Keep replies in request order when one of them must wait (first-call delay)."""
        loop = asyncio.get_running_loop()
        ready = loop.time() + delay
        if self._held:
            ready = max(ready, self._held[-1][0])
        self._held.append((ready, data, close))
        if self._transport is not None:
            self._transport.pause_reading()  # no more requests pile up behind a held one
        self._schedule_release()

    def _schedule_release(self) -> None:
        if self._release_timer is not None or not self._held:
            return
        loop = asyncio.get_running_loop()
        self._release_timer = loop.call_at(self._held[0][0], self._release)

    def _release(self) -> None:
        self._release_timer = None
        now = asyncio.get_running_loop().time()
        while self._held and self._held[0][0] <= now:
            _, data, close = self._held.popleft()
            self._write(data, close)
        self._schedule_release()
        if self._held:
            return
        if self._eof:
            self.close()
        elif self._transport is not None and not self._closing and not self._write_paused:
            self._transport.resume_reading()

    def close_if_idle(self, now: float) -> None:
        """Close a connection that has been silent for ``IDLE_TIMEOUT`` (nothing pending)."""
        if not self._held and now - self.last_active > IDLE_TIMEOUT:
            self.close()

    def close(self) -> None:
        """Close now (server shutdown)."""
        if self._transport is not None:
            self._closing = True
            self._transport.close()


class EndpointServer:
    """The endpoint's listeners; ``close()`` stops accepting and drops connections."""

    def __init__(
        self, servers: list[asyncio.Server], live: set[_Connection], date: _DateHeader
    ) -> None:
        self.servers = servers
        self._live = live
        self._date = date
        self._sweeper = asyncio.get_running_loop().call_later(IDLE_SWEEP, self._sweep)

    def _sweep(self) -> None:
        """One timer for every connection's idle timeout (cheaper than one per request)."""
        self._date.line()
        now = self._date.second
        for connection in list(self._live):
            connection.close_if_idle(now)
        self._sweeper = asyncio.get_running_loop().call_later(IDLE_SWEEP, self._sweep)

    async def close(self) -> None:
        self._sweeper.cancel()
        for server in self.servers:
            server.close()
        for connection in list(self._live):
            connection.close()
        for server in self.servers:
            await server.wait_closed()


async def serve_endpoint(endpoint: Endpoint, sockets: list[socket.socket]) -> EndpointServer:
    """Start serving ``endpoint`` on already-bound ``sockets``."""
    loop = asyncio.get_running_loop()
    date = _DateHeader()
    encoder = _Encoder(date)
    live: set[_Connection] = set()
    servers = [
        await loop.create_server(
            lambda: _Connection(endpoint, encoder, date, live), sock=sock, backlog=4096
        )
        for sock in sockets
    ]
    return EndpointServer(servers, live, date)
