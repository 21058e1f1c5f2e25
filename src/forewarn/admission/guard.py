"""uvicorn's httptools protocol behind its listener's admission rules (``Gate``).

uvicorn serves a connection from its first byte to its last with no deadline of its own
but the keep-alive one after a reply: a client that connects and says nothing, or trickles
a request head, or never finishes a TLS handshake (which asyncio would give 60 s, before
uvicorn even sees the connection), holds its descriptor as long as it likes. Here a
connection is taken into the listeners' ``Pool`` when it is accepted, before any TLS, then
its TLS handshake and first request head must be in within ``header_timeout`` of the
accept, a later head within ``header_timeout`` of its first byte, and a body within
``body_timeout`` of its head; else the connection is closed. TLS is put in here (asyncio's
``SSLProtocol`` between the socket and this protocol, as ``loop.start_tls`` does) rather
than by the server, so that all of this holds before and during the handshake too.
"""

from __future__ import annotations

import asyncio
import logging
import math
import ssl
from asyncio.sslproto import SSLProtocol
from dataclasses import dataclass
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from forewarn.admission.pool import Pool

__all__ = ["BODY_TIMEOUT", "HEADER_TIMEOUT", "Gate", "GuardedProtocol", "guarded"]

log = logging.getLogger(__name__)

#: Seconds for a handshake and request head, then for a body (the metadata endpoint's).
HEADER_TIMEOUT = 10.0
BODY_TIMEOUT = 30.0


@dataclass(eq=False)
class Gate:
    """One listener's rules: the pool it shares, its deadlines, its TLS (None: plain)."""

    pool: Pool
    header_timeout: float = HEADER_TIMEOUT
    body_timeout: float = BODY_TIMEOUT
    tls: ssl.SSLContext | None = None


class GuardedProtocol(HttpToolsProtocol):
    """One connection of a guarded listener (``guarded`` binds the class to a gate)."""

    gate: ClassVar[Gate]
    address: str | None = None
    last_active = 0.0
    #: HTTP has started (after TLS, when there is TLS): uvicorn's part runs.
    http_started = False
    _raw: asyncio.Transport | None = None
    _deadline: float | None = None
    _timer: asyncio.TimerHandle | None = None
    _handling = 0
    _gone = False

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if self._raw is not None:  # the second time: TLS is up, and this is its transport
            self._start(transport)
            return
        self._raw = transport
        peer = transport.get_extra_info("peername")
        self.address = peer[0] if isinstance(peer, tuple) else None
        now = self.last_active = self.loop.time()
        gate = self.gate
        if not gate.pool.admit(self, now):
            self._gone = True
            transport.abort()
            return
        self.connections.add(self)  # uvicorn's shutdown reaches it before HTTP starts
        self._expect(gate.header_timeout)
        if gate.tls is None:
            self._start(transport)
            return
        # TLS in between now, before the loop reads the ClientHello (``loop.start_tls``
        # would start on the next turn, after uvloop has handed the bytes to us).
        waiter = self.loop.create_future()
        waiter.add_done_callback(self._handshaken)
        tls = SSLProtocol(
            self.loop, self, gate.tls, waiter, server_side=True,
            ssl_handshake_timeout=math.ceil(gate.header_timeout),  # (ours is the sooner)
        )  # fmt: skip
        transport.set_protocol(tls)
        tls.connection_made(transport)

    def _handshaken(self, waiter: asyncio.Future[None]) -> None:
        """The handshake is over: HTTP has started (``connection_made`` again), or it
        failed (garbage, a reset, the deadline) and the connection goes."""
        if not waiter.cancelled():
            waiter.exception()  # (a client's failed handshake is no error of ours)
        if not self.http_started:
            self.shed()

    def _start(self, transport: asyncio.Transport) -> None:
        self.http_started = True
        super().connection_made(transport)
        self.started()

    def started(self) -> None:
        """HTTP has started on the connection (for subclasses)."""

    def connection_lost(self, exc: Exception | None) -> None:
        self._end()
        if self.http_started:
            super().connection_lost(exc)

    def _end(self) -> None:
        self._gone = True
        self._expect(None)
        self.gate.pool.release(self)
        self.connections.discard(self)

    # -- the parser's events, for the deadlines
    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._deadline is None:  # (the first head's runs from the accept)
            self._expect(self.gate.header_timeout)

    def on_headers_complete(self) -> None:
        self._handling += 1
        self._expect(self.gate.body_timeout)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._expect(None)

    def on_response_complete(self) -> None:
        self._handling = max(0, self._handling - 1)
        self.last_active = self.loop.time()
        super().on_response_complete()

    def shutdown(self) -> None:
        if self.http_started:
            super().shutdown()
        else:
            self.shed()

    # -- deadlines and shedding
    def _expect(self, seconds: float | None) -> None:
        """A deadline ``seconds`` from now (None: none)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if seconds is None or self._gone:
            self._deadline = None
            return
        self._deadline = self.loop.time() + seconds
        self._timer = self.loop.call_at(self._deadline, self._late)

    def _late(self) -> None:
        self._timer = None
        log.debug(
            "closed a connection from %s: no TLS handshake, request head or body in time",
            self.address,
        )
        self.shed()

    def shed_rank(self) -> tuple[int, float] | None:
        """For ``Pool``: inside a handshake, head or body nearest its deadline first, then
        the longest idle; never one whose request is being handled."""
        if self._gone:
            return None
        if self._deadline is not None:
            return (0, self._deadline)
        if self._handling:
            return None
        return (1, self.last_active)

    def shed(self) -> None:
        """Close at once (no TLS goodbye): room for another, or a deadline passed."""
        if self._gone:
            return
        self._end()
        if self._raw is not None:
            self._raw.abort()


def guarded(base: type[GuardedProtocol], gate: Gate) -> type[GuardedProtocol]:
    """``base`` bound to ``gate``: the class to give ``uvicorn.Config(http=...)``."""
    attributes: dict[str, Any] = {"gate": gate, "__module__": base.__module__}
    return type(base.__name__, (base,), attributes)
