"""``forewarn agent status`` asks a running agent's ``/readyz`` on a bare socket: the
answer's status and body, or None when nothing (or not HTTP) answers."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from forewarn.agent.commands import _readyz
from forewarn.agent.httpserver import HealthServer
from tests.support.ports import free_port


@contextmanager
def _listener(answer: bytes, close: bool = True) -> Iterator[tuple[int, list[bytes]]]:
    """A one-connection server on 127.0.0.1 that reads a request and sends ``answer``
    (then closes, or keeps the connection open until the client hangs up)."""
    server = socket.create_server(("127.0.0.1", 0))
    requests: list[bytes] = []

    def serve() -> None:
        connection, _ = server.accept()
        with connection:
            requests.append(connection.recv(65536))
            connection.sendall(answer)
            if not close:
                connection.recv(1)  # until the client closes

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], requests
    finally:
        thread.join(5)
        server.close()


def test_an_agent_answer_gives_its_status_and_body() -> None:
    body = b"not ready: no answer from the endpoint\n"
    head = f"HTTP/1.1 503 Service Unavailable\r\nContent-Length: {len(body)}\r\n\r\n"
    with _listener(head.encode() + body) as (port, requests):
        assert _readyz("127.0.0.1", port) == "503 not ready: no answer from the endpoint"
    assert requests[0].startswith(b"GET /readyz HTTP/1.1\r\n")


def test_an_answer_is_taken_at_its_content_length_without_waiting_for_the_close() -> None:
    with _listener(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nready", close=False) as (
        port,
        _,
    ):
        assert _readyz("127.0.0.1", port) == "200 ready"


def test_no_listener_or_not_http_is_none() -> None:
    with _listener(b"SSH-2.0-OpenSSH_9.6\r\n") as (port, _):
        assert _readyz("127.0.0.1", port) is None
    assert _readyz("127.0.0.1", free_port()) is None  # nothing listens


async def test_the_agents_own_listener_answers_it() -> None:
    ready = [False]
    server = HealthServer(
        "127.0.0.1:0",
        metrics=lambda: b"",
        ready=lambda: (ready[0], "ready" if ready[0] else "the endpoint has not answered yet"),
        status=lambda: {},
    )
    await server.start()
    try:
        asked = await asyncio.to_thread(_readyz, "127.0.0.1", server.port)
        assert asked == "503 the endpoint has not answered yet"
        ready[0] = True
        assert await asyncio.to_thread(_readyz, "127.0.0.1", server.port) == "200 ready"
    finally:
        await server.close()
