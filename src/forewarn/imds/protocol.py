"""A lean HTTP/1.1 server for the endpoint: httptools parsing straight into ``Endpoint``.

Why not uvicorn here: the endpoint's hot path is a cached byte string, so per-request
framework overhead dominates; this protocol is a few hundred lines less and several times
faster on the same machine (see ``bench/imds_throughput.py``). It keeps what clients rely
on: keep-alive and pipelining in order, ``Connection: close`` on every response after
which the server closes, absolute-form request lines, back-pressure, and an idle timeout
long enough that clients always close idle connections first. What it does against
hostile clients is in ``connection.py`` (order and back-pressure) and ``reading.py`` (size
limits and deadlines); this module runs the listeners and the one timer that enforces
every connection's deadlines.
"""

from __future__ import annotations

import asyncio
import resource
import socket
from collections.abc import Callable
from functools import partial

from forewarn.imds.connection import IDLE_TIMEOUT, Connection
from forewarn.imds.endpoint import ImdsSettings
from forewarn.imds.framing import DateHeader, Encoder
from forewarn.imds.messages import Handler, Repeater
from forewarn.imds.reading import MAX_HEAD
from forewarn.imds.repeats import Repeats
from forewarn.imds.shared import Shared
from forewarn.imds.shedding import Room, fd_threshold

__all__ = ["IDLE_TIMEOUT", "MAX_HEAD", "EndpointServer", "per_address_cap", "serve_endpoint"]

IDLE_SWEEP = 30.0


def per_address_cap(configured: int) -> int:
    """The per-address connection cap in force: ``configured``, but never more than a
    quarter of the open-file limit, so that one address can never take every descriptor."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return configured
    return max(1, min(configured, soft // 4))


class EndpointServer:
    """The endpoint's listeners; ``close()`` stops accepting and drops connections."""

    def __init__(self, servers: list[asyncio.Server], shared: Shared) -> None:
        self.servers = servers
        self._shared = shared
        shortest = min(shared.header_timeout, shared.body_timeout)
        self._tick = min(1.0, max(0.05, shortest / 5))  # deadlines are kept within 20 %
        loop = shared.loop
        self._next_idle_sweep = loop.time() + IDLE_SWEEP
        self._timer = loop.call_later(self._tick, self._sweep)

    @property
    def per_address_cap(self) -> int:
        """Connections allowed per client address."""
        return self._shared.per_address_cap

    @property
    def room(self) -> Room | None:
        """What sheds connections when descriptors run short."""
        return self._shared.room

    @property
    def connections(self) -> int:
        """Open connections."""
        return len(self._shared.live)

    @property
    def deferred(self) -> int:
        """Deferred replies (``Reply.wait``) not resolved yet, whether or not anyone waits."""
        return len(self._shared.waits)

    def _sweep(self) -> None:
        """One timer for every connection's deadlines (cheaper than one per request)."""
        shared = self._shared
        now = shared.loop.time()
        for reading in list(shared.deadlines):
            reading.expire_if_late(now)
        if now >= self._next_idle_sweep:
            self._next_idle_sweep = now + IDLE_SWEEP
            shared.date.line()
            second = shared.date.second
            for live in list(shared.live):
                live.close_if_idle(second)
        self._timer = shared.loop.call_later(self._tick, self._sweep)

    async def close(self) -> None:
        self._timer.cancel()
        for server in self.servers:
            server.close()
        for connection in list(self._shared.live):
            connection.close()
        for server in self.servers:
            await server.wait_closed()


async def serve_endpoint(
    endpoint: Handler,
    sockets: list[socket.socket],
    settings: ImdsSettings | None = None,
    *,
    shed_from: int | None = None,
) -> EndpointServer:
    """Start serving ``endpoint`` on already-bound ``sockets``.

    ``settings`` defaults to the endpoint's own (``Endpoint.settings``); ``shed_from`` is
    the descriptor number from which connections are shed (default: ``fd_threshold()``;
    a process with other listeners keeps their share below it, ``admission/budget.py``).
    """
    if settings is None:
        own = getattr(endpoint, "settings", None)
        settings = own if isinstance(own, ImdsSettings) else ImdsSettings()
    loop = asyncio.get_running_loop()
    date = DateHeader()
    encoder = Encoder(date)
    shared = Shared(
        endpoint=endpoint,
        repeats=Repeats(endpoint if isinstance(endpoint, Repeater) else None, encoder),
        encoder=encoder,
        date=date,
        loop=loop,
        header_timeout=settings.header_timeout,
        body_timeout=settings.body_timeout,
        per_address_cap=per_address_cap(settings.max_connections_per_address),
    )
    shared.room = Room(shared.live, fd_threshold() if shed_from is None else shed_from)
    servers = [
        await loop.create_server(_factory(shared, sock), sock=sock, backlog=4096)
        for sock in sockets
    ]
    return EndpointServer(servers, shared)


def _factory(shared: Shared, listener: socket.socket) -> Callable[[], Connection]:
    """The connections of one listener: they all share its local port."""
    address = listener.getsockname()
    port = address[1] if isinstance(address, tuple) else None
    return partial(Connection, shared, port)
