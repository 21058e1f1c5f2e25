"""A long pipeline on one connection must not stall the others (issue 6, section 2).

The server runs on uvloop in a thread of its own and serves a stand-in endpoint that
records whom it answered, in order; the clients are plain blocking sockets in the test's
thread. To make the bad input real, a whole 20,000-request pipeline is put in the socket
buffers at once: the stand-in blocks the server's loop on a chosen request (as a slow
handler would) until the pipeline has been written, then lets it go.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import uvloop

from forewarn.imds import ImdsSettings, serve_endpoint
from forewarn.imds.messages import TEXT, Reply, Request
from tests.imds.rawhttp import HOST

A, B, C = "127.1.0.2", "127.1.0.7", "127.1.0.12"
PIPELINE = 20_000
PING = b"GET / HTTP/1.1\r\n\r\n"  # the smallest request: the most requests per byte
PONG = Reply(200, b"pong", content_type=TEXT)
#: What Linux allows by default (net.core.rmem_max/wmem_max), so that the test behaves
#: the same on a host with larger maxima.
DEFAULT_MAX_BUFFER = 212_992
TIMEOUT = 20.0


@dataclass
class Gate:
    """A stand-in endpoint; the first request from ``gated`` blocks the server's loop
    until ``release`` is set."""

    gated: str
    order: list[str] = field(default_factory=list)
    engaged: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def handle(self, request: Request) -> Reply:
        assert request.client is not None
        self.order.append(request.client)
        if request.client == self.gated and not self.engaged.is_set():
            self.engaged.set()
            assert self.release.wait(TIMEOUT), "the test never opened the gate"
        return PONG

    def answered(self, client: str) -> int:
        return self.order.count(client)


@contextmanager
def threaded_server(endpoint: Gate, *, sndbuf: int | None = None) -> Iterator[int]:
    """``serve_endpoint(endpoint)`` on uvloop in a thread; yields the port."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, DEFAULT_MAX_BUFFER)
    if sndbuf is not None:  # accepted sockets inherit both
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
    listener.bind((HOST, 0))
    port = listener.getsockname()[1]
    loop = uvloop.new_event_loop()
    started = threading.Event()
    stop = asyncio.Event()

    async def main() -> None:
        server = await serve_endpoint(endpoint, [listener], ImdsSettings(rate_limit=None))
        started.set()
        await stop.wait()
        await server.close()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    try:
        assert started.wait(TIMEOUT)
        yield port
    finally:
        endpoint.release.set()
        loop.call_soon_threadsafe(stop.set)
        thread.join(TIMEOUT)
        loop.close()


def connect(port: int, source: str, *, sndbuf: int | None = None, rcvbuf: int | None = None
            ) -> socket.socket:  # fmt: skip
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if sndbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.bind((source, 0))
    sock.settimeout(TIMEOUT)
    sock.connect((HOST, port))
    return sock


def read_reply(sock: socket.socket) -> bytes:
    """Read exactly one PONG: its head, then the Content-Length it declares (a read may
    also hold the start of the next reply, which is left in the socket)."""
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        chunk = sock.recv(1)
        assert chunk, "closed"
        head += chunk
    assert head.startswith(b"HTTP/1.1 200 OK\r\n"), head
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    body = read_exactly(sock, length)
    assert body == b"pong", body
    return head + body


def response_size(sock: socket.socket) -> int:
    """Ask once and read the answer; every PONG has this size (the date is fixed-width)."""
    sock.sendall(PING)
    return len(read_reply(sock))


def read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, got = [], 0
    while got < size:
        chunk = sock.recv(min(1 << 20, size - got))
        assert chunk, f"closed after {got} of {size} bytes"
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def send_in_background(sock: socket.socket, data: bytes) -> threading.Thread:
    sender = threading.Thread(target=sock.sendall, args=(data,), daemon=True)
    sender.start()
    return sender


def test_another_connection_is_answered_before_a_long_pipeline_finishes() -> None:
    gate = Gate(gated=A)
    with threaded_server(gate) as port:
        other = connect(port, B)
        size = response_size(other)  # B is connected and has been served once
        pipelined = connect(port, A, sndbuf=DEFAULT_MAX_BUFFER)
        received: list[int] = []
        reader = threading.Thread(
            target=lambda: received.append(len(read_exactly(pipelined, PIPELINE * size))),
            daemon=True,
        )
        reader.start()  # A reads its replies as they come: no back-pressure involved
        sender = send_in_background(pipelined, PING * PIPELINE)
        assert gate.engaged.wait(TIMEOUT)
        sender.join(TIMEOUT)
        assert not sender.is_alive(), "the pipeline does not fit in the socket buffers"
        other.sendall(PING)  # B asks while all of A's pipeline is waiting to be read
        gate.release.set()
        assert len(read_exactly(other, size)) == size
        reader.join(TIMEOUT)
        assert received == [PIPELINE * size], "A's pipeline was not answered in full"
    b_answer = [i for i, client in enumerate(gate.order) if client == B][1]
    answered_before_b = gate.order[:b_answer].count(A)
    assert gate.answered(A) == PIPELINE
    assert answered_before_b < PIPELINE // 10, (
        f"B waited for {answered_before_b} of A's {PIPELINE} pipelined requests"
    )


def test_a_client_that_does_not_read_its_replies_is_not_read_either() -> None:
    gate = Gate(gated=C)
    with threaded_server(gate, sndbuf=4096) as port:
        blocker = connect(port, C)
        blocker.sendall(PING)  # holds the server's loop while the pipeline piles up
        assert gate.engaged.wait(TIMEOUT)
        pipelined = connect(port, A, sndbuf=DEFAULT_MAX_BUFFER, rcvbuf=4096)
        sender = send_in_background(pipelined, PING * PIPELINE)
        sender.join(TIMEOUT)
        assert not sender.is_alive(), "the pipeline does not fit in the socket buffers"
        gate.release.set()
        # A reads nothing: once its replies back up, the server must stop reading from it.
        plateau = wait_until_steady(lambda: gate.answered(A))
        assert plateau < PIPELINE // 4, f"{plateau} requests answered to a client not reading"
        read_reply(blocker)  # the request that held the loop is answered
        size = response_size(blocker)  # the others are still served meanwhile
        read_exactly(pipelined, PIPELINE * size)  # A reads at last: the rest is answered
        assert gate.answered(A) == PIPELINE


def wait_until_steady(count: object) -> int:
    """The value of ``count()`` once it has not changed for half a second."""
    assert callable(count)
    deadline = time.monotonic() + TIMEOUT
    last, steady_since = -1, time.monotonic()
    while time.monotonic() < deadline:
        now = count()
        if now != last:
            last, steady_since = now, time.monotonic()
        elif time.monotonic() - steady_since >= 0.5:
            return int(now)
        time.sleep(0.05)
    raise AssertionError(f"still changing after {TIMEOUT}s (at {last})")
