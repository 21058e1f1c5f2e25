"""forewarn's side: every connection COMMAND makes to a listening socket of its sandbox,
relayed byte for byte to where that socket leads in the host's network.

A byte relay changes nothing of what passes: keep-alive, pipelining, ETag/304, error
statuses and injected faults reach COMMAND as the server sends them. A connection reset
on one side is a reset on the other (SO_LINGER 0), an upstream nobody answers at is a
reset too, and an end of stream is passed on as one (half-close), so COMMAND sees what
a client of the server itself would.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass

__all__ = ["Route", "serve"]

_CHUNK = 1 << 16
_ABORT = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 seconds: close() sends RST


@dataclass(frozen=True, slots=True)
class Route:
    """Connections accepted on ``listener`` go to ``upstream``, from ``source`` if given
    (the VM's own loopback address: how the endpoint knows which VM asks)."""

    listener: socket.socket
    upstream: tuple[str, int]
    source: str | None = None


class _Reset(Exception):
    """One side of a relayed connection was reset."""


def _abort(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _ABORT)
    sock.close()


async def _pump(loop: asyncio.AbstractEventLoop, src: socket.socket, dst: socket.socket) -> None:
    while True:
        try:
            data = await loop.sock_recv(src, _CHUNK)
        except OSError as exc:
            raise _Reset from exc
        if not data:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)
            return
        try:
            await loop.sock_sendall(dst, data)
        except OSError as exc:
            raise _Reset from exc


async def _relay(loop: asyncio.AbstractEventLoop, conn: socket.socket, route: Route) -> None:
    host = route.upstream[0]
    upstream = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    upstream.setblocking(False)
    try:
        if route.source is not None:
            upstream.bind((route.source, 0))
        await loop.sock_connect(upstream, route.upstream)
    except OSError:
        _abort(upstream)
        _abort(conn)  # what a client of a server that is down sees: refused, reset
        return
    for sock in (conn, upstream):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    pumps = [
        asyncio.ensure_future(_pump(loop, conn, upstream)),
        asyncio.ensure_future(_pump(loop, upstream, conn)),
    ]
    reset = True  # unless both directions end cleanly (a cancelled relay resets)
    try:
        done, _ = await asyncio.wait(pumps, return_when=asyncio.FIRST_EXCEPTION)
        reset = any(task.exception() is not None for task in done) or len(done) < 2
    finally:
        for task in pumps:
            task.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
        for sock in (conn, upstream):
            if reset:
                _abort(sock)
            else:
                sock.close()


async def _accept(
    loop: asyncio.AbstractEventLoop, route: Route, tasks: set[asyncio.Task[None]]
) -> None:
    route.listener.setblocking(False)
    while True:
        conn, _ = await loop.sock_accept(route.listener)
        conn.setblocking(False)
        task = asyncio.ensure_future(_relay(loop, conn, route))
        tasks.add(task)
        task.add_done_callback(tasks.discard)


async def serve(routes: Sequence[Route], until: Awaitable[object]) -> None:
    """Relay every route's connections until ``until`` is done; then drop them all."""
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task[None]] = set()
    acceptors = [asyncio.ensure_future(_accept(loop, route, tasks)) for route in routes]
    try:
        await until
    finally:
        for task in [*acceptors, *tasks]:
            task.cancel()
        await asyncio.gather(*acceptors, *tasks, return_exceptions=True)
        for route in routes:
            route.listener.close()
