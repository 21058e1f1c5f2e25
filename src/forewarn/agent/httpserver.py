"""The agent's small HTTP listener: ``/metrics``, ``/healthz``, ``/readyz`` and ``/status``.

Plain asyncio, one request per connection: it serves a scraper and a probe now and then,
so a web framework would only add memory to every VM. It runs on the agent's loop, so it
answers exactly while the loop is alive: that is what liveness means here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

from forewarn.agent.config_schema import parse_bind
from forewarn.agent.metrics import CONTENT_TYPE

__all__ = ["HealthServer", "parse_bind"]

_REASONS = {
    200: "OK",
    404: "Not Found",
    405: "Method Not Allowed",
    503: "Service Unavailable",
    400: "Bad Request",
}


class HealthServer:
    """Serves the callbacks it is given; ``ready()`` returns (ready, why)."""

    def __init__(
        self,
        bind: str,
        metrics: Callable[[], bytes],
        ready: Callable[[], tuple[bool, str]],
        status: Callable[[], dict[str, Any]],
    ) -> None:
        self.host, self.port = parse_bind(bind)
        self._metrics = metrics
        self._ready = ready
        self._status = status
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        sockets = self._server.sockets
        if sockets:
            self.port = sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    def _answer(self, method: str, path: str) -> tuple[int, str, bytes]:
        path = path.split("?", 1)[0]
        if method not in ("GET", "HEAD"):
            return 405, "text/plain", b"method not allowed\n"
        if path == "/metrics":
            return 200, CONTENT_TYPE, self._metrics()
        if path == "/healthz":
            return 200, "text/plain", b"ok\n"
        if path == "/readyz":
            ready, why = self._ready()
            return (200 if ready else 503), "text/plain", why.encode() + b"\n"
        if path == "/status":
            return 200, "application/json", json.dumps(self._status()).encode()
        return 404, "text/plain", b"not found\n"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            parts = head.split(b"\r\n", 1)[0].decode("latin-1").split()
            if len(parts) != 3:
                status, ctype, body = 400, "text/plain", b"bad request\n"
            else:
                status, ctype, body = self._answer(parts[0], parts[1])
            header = (
                f"HTTP/1.1 {status} {_REASONS.get(status, '')}\r\n"
                f"Content-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n"
            ).encode()
            writer.write(header + (b"" if parts[:1] == ["HEAD"] else body))
            await writer.drain()
        except (
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            TimeoutError,
            ConnectionError,
        ):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
