"""The control app under a real uvicorn on a loopback socket, and raw HTTP/1.1 requests.

Raw requests send exactly the bytes a browser or an attacker would (any ``Host``, any
``Origin``, a body with invalid UTF-8), which an HTTP client library would tidy up.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgspec
import uvicorn

from forewarn.control import ControlApp

__all__ = ["RawResponse", "live_server", "raw_request"]


@dataclass
class RawResponse:
    status_code: int
    headers: dict[str, str]  # lower-case names
    body: bytes

    def json(self) -> Any:
        return msgspec.json.decode(self.body)


@contextlib.contextmanager
def live_server(app: ControlApp, host: str = "127.0.0.1") -> Iterator[int]:
    """Serve ``app`` on ``host`` (a free port) for the block; yields the port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.bind((host, 0))
    port: int = sock.getsockname()[1]
    config = uvicorn.Config(app.asgi, lifespan="off", log_level="critical", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])))
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()


def raw_request(
    port: int,
    method: str,
    path: str,
    headers: list[tuple[str, str]],
    body: bytes = b"",
    host: str = "127.0.0.1",
) -> RawResponse:
    """One request on a fresh connection, exactly these headers (plus Content-Length)."""
    lines = [f"{method} {path} HTTP/1.1", *(f"{k}: {v}" for k, v in headers)]
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    lines.append("Connection: close")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    with socket.create_connection((host, port), timeout=20) as conn:
        conn.sendall(head + body)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    head_bytes, _, rest = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head_bytes.decode("latin-1").split("\r\n")
    parsed = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        parsed[name.strip().lower()] = value.strip()
    return RawResponse(int(status_line.split()[1]), parsed, rest)
