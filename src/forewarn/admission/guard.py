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

A reply sent while its request's body is still coming (a 413 before the body is read, a
401 for a PATCH) does not end the connection under the client's writes: what the client
still sends of that body is read and discarded, within ``imds/lingering.py``'s bounds, and
the connection then closes (the reply said ``connection: close``) or carries on. uvicorn
would close at once, and a client still writing (urllib, which sends the whole body before
it reads) would get a reset instead of the answer.
"""

from __future__ import annotations

import asyncio
import logging
import math
import ssl
from asyncio.sslproto import SSLProtocol
from dataclasses import dataclass
from typing import Any, ClassVar

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from forewarn.admission.pool import Pool
from forewarn.imds.lingering import Linger

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
    #: The request being read has a body still coming (headers in, message not over).
    _body_due = False
    _declared: int | None = None
    _body_seen = 0
    #: After a reply sent while its body was still coming: the rest is read and dropped.
    _linger: Linger | None = None
    _linger_closes = False

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
        if self.transport.is_closing():
            return  # a request after a refused one, in the same read: not served
        self._handling += 1
        self._expect(self.gate.body_timeout)
        self._body_due = True
        self._body_seen = 0
        self._declared = _content_length(self.headers)
        super().on_headers_complete()
        if self.cycle is not None:
            self.cycle.transport = _CycleTransport(self)

    def on_body(self, body: bytes) -> None:
        self._body_seen += len(body)
        linger = self._linger
        if linger is None:
            super().on_body(body)
        elif not linger.took(len(body), self.loop.time()):
            self._drop()
        elif self._linger_closes:
            self._expect(linger.deadline() - self.loop.time())

    def on_message_complete(self) -> None:
        self._body_due = False
        if self._linger is None:
            super().on_message_complete()
            self._expect(None)
            return
        closes, self._linger = self._linger_closes, None  # the answered body is over
        self._expect(None)
        if closes:
            self.transport.close()
        elif self.timeout_keep_alive_task is None and not self.transport.is_closing():
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive, self.timeout_keep_alive_handler
            )

    def on_response_complete(self) -> None:
        self._handling = max(0, self._handling - 1)
        self.last_active = self.loop.time()
        super().on_response_complete()
        if self._linger is not None:  # (started by ``close_after_reply``)
            self._unset_keepalive_if_required()
        elif self._body_due and self.cycle.response_complete and not self.transport.is_closing():
            self._start_lingering(closes=False)  # (the answered request's body, not a next one's)

    def data_received(self, data: bytes) -> None:
        if self._linger is None:
            super().data_received(data)
            return
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade):
            self._drop()  # not the body it announced: no second answer, just the close

    # -- lingering after a reply (``imds/lingering.py``)
    def close_after_reply(self) -> None:
        """uvicorn closes after a reply: at once, or once the request's body is over."""
        if self._body_due and not self.transport.is_closing():
            self.pipeline.clear()  # the reply said close: no request after it is served
            self._start_lingering(closes=True)
        else:
            self.transport.close()

    def _start_lingering(self, *, closes: bool) -> None:
        coming = None if self._declared is None else self._declared - self._body_seen
        if not Linger.worth(coming):
            self._drop()
            return
        now = self.loop.time()
        linger = self._linger = Linger(now)
        self._linger_closes = closes
        if closes:  # (else the body's own deadline still runs)
            self._expect(linger.deadline() - now)

    def _drop(self) -> None:
        """Past lingering's bounds: close the connection now (what was written still goes)."""
        self._linger = None
        self._expect(None)
        if self._raw is not None:
            self._raw.close()

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
        if self._linger is not None:
            self._drop()  # the refused client sent nothing more in time
            return
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


class _CycleTransport(asyncio.Transport):
    """The transport as uvicorn's request cycle sees it: its ``close`` after a reply goes
    through ``GuardedProtocol.close_after_reply``, which may linger first."""

    def __init__(self, protocol: GuardedProtocol) -> None:
        super().__init__()
        self._protocol = protocol

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._protocol.transport.write(data)

    def is_closing(self) -> bool:
        return self._protocol.transport.is_closing()

    def close(self) -> None:
        self._protocol.close_after_reply()


def _content_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    for name, value in headers:
        if name == b"content-length":
            return int(value) if value.isdigit() else None  # (the parser checked it)
    return None


def guarded(base: type[GuardedProtocol], gate: Gate) -> type[GuardedProtocol]:
    """``base`` bound to ``gate``: the class to give ``uvicorn.Config(http=...)``."""
    attributes: dict[str, Any] = {"gate": gate, "__module__": base.__module__}
    return type(base.__name__, (base,), attributes)
