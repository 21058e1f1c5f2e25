"""Raw HTTP/1.1 over real sockets, for the tests of ``forewarn serve``'s protocol.

No HTTP client library: requests are bytes, responses are read off the wire and framed by
their content-length, so assertions are on the exact bytes. The client's source address
picks the VM (127.1.0.2 is web-1); Linux routes all of 127.0.0.0/8 to loopback, so any
such address can be bound.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import pytest

from forewarn.imds import ImdsSettings, serve_endpoint
from forewarn.imds.messages import Handler
from forewarn.imds.protocol import EndpointServer
from tests.imds.conftest import INSTANCE_VERSION, JSON_TYPE, NEWEST, SE, Imds

HOST = "127.0.0.1"
WEB1 = "127.1.0.2"
WORKERS0 = "127.1.0.7"
FRONTEND0 = "127.1.0.12"
TIMEOUT = 5.0

NAME_TARGET = f"/metadata/instance/compute/name?api-version={INSTANCE_VERSION}&format=text"
MALFORMED_BODY = b'{"error":"Malformed request"}'
TOO_LARGE_BODY = b'{"error":"Request body too large"}'
DATE_RE = re.compile(
    rb"(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
    rb" \d{4} \d\d:\d\d:\d\d GMT"
)


def se_target(version: str = NEWEST) -> str:
    """The Scheduled Events request target at ``version`` (origin form)."""
    return f"{SE}?api-version={version}"


def request(
    method: str = "GET",
    target: str | None = None,
    *,
    headers: Sequence[tuple[str, str]] = (("Metadata", "true"),),
    body: bytes = b"",
    http: str = "HTTP/1.1",
) -> bytes:
    """A raw request; a body gets a content-length unless ``headers`` frame it."""
    lines = [f"{method} {target or se_target()} {http}", "Host: 169.254.169.254"]
    lines += [f"{name}: {value}" for name, value in headers]
    framed = any(name.lower() in ("content-length", "transfer-encoding") for name, _ in headers)
    if body and not framed:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def get(version: str = NEWEST, *extra: tuple[str, str], http: str = "HTTP/1.1") -> bytes:
    """A raw GET of the Scheduled Events document, with ``extra`` headers."""
    return request("GET", se_target(version), headers=(("Metadata", "true"), *extra), http=http)


def start_requests(*ids: str) -> bytes:
    return json.dumps({"StartRequests": [{"EventId": i} for i in ids]}).encode()


def chunked(*pieces: bytes) -> bytes:
    """``pieces`` in chunked transfer coding, with the terminating chunk."""
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


@dataclass
class Response:
    """One response as read off the wire."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes
    raw: bytes

    def header(self, name: str) -> bytes | None:
        """The single value of header ``name`` (lower-case), or None."""
        values = [v for k, v in self.headers if k == name.encode()]
        assert len(values) <= 1, f"{name} sent {len(values)} times"
        return values[0] if values else None

    @property
    def without_date(self) -> bytes:
        """The raw bytes minus the ``date`` line (which may tick between two responses)."""
        return re.sub(rb"\r\ndate: [^\r]*", b"", self.raw)


def parse_head(head: bytes) -> tuple[int, list[tuple[bytes, bytes]]]:
    """Status code and (lower-cased name, value) headers of a response head."""
    status_line, *lines = head[:-4].split(b"\r\n")
    version, code, _reason = status_line.split(b" ", 2)
    assert version == b"HTTP/1.1", status_line
    headers = []
    for line in lines:
        name, sep, value = line.partition(b":")
        assert sep and name == name.strip().lower(), line
        headers.append((name, value.strip()))
    return int(code), headers


def expected_bytes(
    response: Response, status: bytes, body: bytes, *extra: bytes, close: bool = False
) -> bytes:
    """What the server must send: status line, date, content type, ``extra`` headers,
    content-length, ``connection: close`` when ``close``, then the body."""
    date = response.header("date")
    assert date is not None
    head = [b"HTTP/1.1 " + status, b"date: " + date, b"content-type: " + JSON_TYPE.encode()]
    head += extra
    head.append(b"content-length: %d" % len(body))
    if close:
        head.append(b"connection: close")
    return b"\r\n".join(head) + b"\r\n\r\n" + body


@dataclass
class Client:
    """A raw connection to the endpoint."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    async def send(self, *parts: bytes, pause: float = 0.0) -> None:
        """Write ``parts`` one by one (separate TCP writes when ``pause`` is set)."""
        for i, part in enumerate(parts):
            if i and pause:
                await asyncio.sleep(pause)
            self.writer.write(part)
            await asyncio.wait_for(self.writer.drain(), TIMEOUT)

    async def response(self) -> Response:
        """Read exactly one response, framed by its content-length (none for a 304)."""
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), TIMEOUT)
        status, headers = parse_head(head)
        lengths = [v for k, v in headers if k == b"content-length"]
        if status == 304:
            assert lengths == [], "a 304 must not announce a body"
            length = 0
        else:
            assert len(lengths) == 1, head
            length = int(lengths[0])
        body = await asyncio.wait_for(self.reader.readexactly(length), TIMEOUT)
        return Response(status, headers, body, head + body)

    async def responses(self, count: int) -> list[Response]:
        return [await self.response() for _ in range(count)]

    async def ask(self, *requests: bytes) -> list[Response]:
        """Send ``requests`` pipelined in one write and read their responses."""
        await self.send(b"".join(requests))
        return await self.responses(len(requests))

    async def rest(self) -> bytes:
        """Everything until the server closes (fails if it does not close)."""
        return await asyncio.wait_for(self.reader.read(), TIMEOUT)

    async def unsolicited(self) -> bytes:
        """Whatever arrives unasked within a moment (b"" for nothing, or for EOF)."""
        try:
            return await asyncio.wait_for(self.reader.read(65536), 0.1)
        except TimeoutError:
            return b""

    async def assert_open(self) -> None:
        """The server neither closed nor sent anything unasked."""
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(self.reader.read(1), 0.05)
        assert not self.reader.at_eof()


@dataclass
class Served:
    """An endpoint server on an ephemeral port, with a way to connect to it."""

    imds: Imds | None  # None when a stand-in endpoint is served
    server: EndpointServer
    port: int
    clients: list[Client] = field(default_factory=list)

    async def connect(
        self, source: str | None = WEB1, port: int | None = None, *, rcvbuf: int | None = None
    ) -> Client:
        """A connection from ``source`` (None: 127.0.0.1) to the endpoint (or ``port``)."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            if rcvbuf is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            sock.bind((source or HOST, 0))
            sock.setblocking(False)
            await asyncio.wait_for(
                asyncio.get_running_loop().sock_connect(sock, (HOST, port or self.port)), TIMEOUT
            )
        except BaseException:
            sock.close()
            raise
        reader, writer = await asyncio.open_connection(sock=sock)
        client = Client(reader, writer)
        self.clients.append(client)
        return client


def bound_socket(sndbuf: int | None = None) -> socket.socket:
    """A TCP socket bound to an ephemeral port of 127.0.0.1 (accepted sockets inherit
    ``sndbuf``)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if sndbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
    sock.bind((HOST, 0))
    return sock


Serve = Callable[..., Awaitable[Served]]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """Start ``serve_endpoint`` for an Imds or a stand-in endpoint (plus any extra bound
    sockets, and ``settings`` other than the endpoint's); stop after."""
    started: list[Served] = []

    async def start(
        target: Imds | Handler,
        extra: Sequence[socket.socket] = (),
        *,
        sndbuf: int | None = None,
        settings: ImdsSettings | None = None,
    ) -> Served:
        main = bound_socket(sndbuf)
        imds = target if isinstance(target, Imds) else None
        endpoint = target.app.endpoint if isinstance(target, Imds) else target
        server = await serve_endpoint(endpoint, [main, *extra], settings)
        served = Served(imds, server, main.getsockname()[1])
        started.append(served)
        return served

    yield start
    for served in started:
        for client in served.clients:
            client.writer.close()
        await served.server.close()


@pytest.fixture
async def served(imds: Imds, serve: Serve) -> Served:
    """The demo fleet (every scope enabled, no rate limit) on a real socket."""
    return await serve(imds)


@pytest.fixture
async def web1(served: Served) -> Client:
    """A connection from web-1's address."""
    return await served.connect(WEB1)
