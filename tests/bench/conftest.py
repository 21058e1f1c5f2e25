"""Fixtures for the benchmark smoke tests: the Go generator, built once, and a scripted
HTTP server that records who connected and what each connection sent."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bench.loadgen import build_fleetgen, go_missing_reason

#: Answers one request (client address, head, body) with raw bytes, or None to close.
Script = Callable[[str, bytes, bytes], bytes | None]


def canned(body: bytes, status: str = "200 OK", extra: bytes = b"") -> bytes:
    """A whole HTTP/1.1 response with a Content-Length body."""
    return (
        b"HTTP/1.1 " + status.encode() + b"\r\ncontent-type: application/json\r\n" + extra
        + b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )  # fmt: skip


@dataclass
class Connection:
    """One accepted connection: the client's address and every request head it sent."""

    peer: str
    requests: list[bytes] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    #: When each request arrived and when the client closed (``time.monotonic``).
    arrived: list[float] = field(default_factory=list)
    closed_at: float | None = None


class ScriptedServer:
    """An asyncio HTTP/1.1 server on a thread, answering with ``script``."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections: list[Connection] = []
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = Connection(writer.get_extra_info("peername")[0])
        self.connections.append(conn)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = await reader.readexactly(length) if length else b""
                conn.requests.append(head)
                conn.bodies.append(body)
                conn.arrived.append(time.monotonic())
                answer = self.script(conn.peer, head, body)
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            conn.closed_at = time.monotonic()
        finally:
            writer.close()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=1024)
        )
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.close()
        self._loop.run_until_complete(server.wait_closed())
        self._loop.close()

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


@pytest.fixture(scope="session")
def fleetgen(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generator binary, built from bench/fleetgen (skipped when go is missing)."""
    reason = go_missing_reason()
    if reason is not None:
        pytest.skip(f"the Go load generator cannot be built: {reason}")
    return build_fleetgen(tmp_path_factory.mktemp("fleetgen"))


@pytest.fixture
def scripted() -> Iterator[Callable[[Script], ScriptedServer]]:
    """Start scripted servers; all stop after the test."""
    started: list[ScriptedServer] = []

    def start(script: Script) -> ScriptedServer:
        server = ScriptedServer(script).__enter__()
        started.append(server)
        return server

    yield start
    for server in started:
        server.__exit__(None, None, None)
