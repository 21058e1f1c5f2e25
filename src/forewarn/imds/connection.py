"""One client connection of the endpoint's HTTP/1.1 server: parse, answer in order, defend.

The hot path is one request per read: feed httptools, hand the request to the endpoint,
write a pre-framed reply. Everything else exists so that one client cannot hurt the others:

- replies leave in request order; a reply that must wait (``Reply.delay``, ``Reply.wait``)
  holds everything behind it, and the requests behind it are not even handled until it is
  sent, so a pipelined GET after an approval sees the approval;
- at most ``PIPELINE_BUDGET`` requests (give or take one ``SLICE`` of input) are answered
  per connection per loop iteration; the rest waits, unparsed, for the next iteration;
- nothing is read from a client that is not reading its replies (write high-water mark),
  nor while a reply is held;
- a request head must arrive whole within ``header_timeout`` and its body within
  ``body_timeout`` (a trickle of bytes does not reset them), else 408 and close;
- a head over ``MAX_HEAD`` (431) or a body over ``MAX_BODY`` (413, refused as soon as its
  declared length is known, before any ``100 Continue``; for a chunked body, as soon as a
  chunk's size line says so) closes the connection, after a short lingering half-close so
  that the client can read why;
- when descriptors run short, the slowest requests and longest idle connections are
  closed to keep room for new VMs (``shedding.py``).
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import socket
import struct
from collections import deque
from dataclasses import dataclass, field, replace

import httptools

from forewarn.imds.deferred import settled
from forewarn.imds.endpoint import MAX_BODY, RULE_HEADERS, TOO_LARGE
from forewarn.imds.framing import (
    CONTINUE,
    HEAD_TOO_LARGE,
    MALFORMED,
    TIMED_OUT,
    DateHeader,
    Encoder,
)
from forewarn.imds.messages import RESET, Handler, Repeater, Reply, Request, Ticket
from forewarn.imds.shedding import Room

__all__ = [
    "IDLE_TIMEOUT",
    "LINGER",
    "MAX_HEAD",
    "PIPELINE_BUDGET",
    "SLICE",
    "Connection",
    "Shared",
]

log = logging.getLogger(__name__)

IDLE_TIMEOUT = 300.0
MAX_HEAD = 64 * 1024
#: Requests answered per connection before other connections get their turn.
PIPELINE_BUDGET = 32
#: Input parsed between two looks at the budget and at back-pressure.
SLICE = 1024
#: Seconds a refused client gets to read our answer before the connection is dropped.
LINGER = 2.0
REFUSAL_LOG_INTERVAL = 60.0

# Phases of the request being read (``Connection._phase``).
_BETWEEN, _HEAD, _BODY = 0, 1, 2
#: ``_deadline_phase`` while a chunk's size is unread: the check after each read (which
#: looks for a changed phase) then reads the size line; no other request pays for it.
_CHUNK_OPEN = 3
_HEX_DIGITS = re.compile(rb"[0-9A-Fa-f]*")


@dataclass(eq=False, slots=True)
class Shared:
    """What the connections of one server share: the endpoint, framing, limits, registries."""

    endpoint: Handler
    #: The endpoint again, when it answers repeated requests unparsed (``Repeater``).
    repeater: Repeater | None
    encoder: Encoder
    date: DateHeader
    loop: asyncio.AbstractEventLoop
    header_timeout: float
    body_timeout: float
    per_address_cap: int
    live: set[Connection] = field(default_factory=set)
    #: Connections inside a request (or not yet past their first): their deadline runs.
    deadlines: set[Connection] = field(default_factory=set)
    per_address: dict[str, int] = field(default_factory=dict)
    #: Deferred replies in progress (a strong reference keeps their tasks alive).
    waits: set[asyncio.Future[Reply]] = field(default_factory=set)
    refusals: int = 0
    last_refusal_log: float = -math.inf
    #: Sheds slow and idle connections when descriptors run short (None: never).
    room: Room | None = None

    def refused(self, address: str) -> None:
        """Log refusals over the per-address cap, at most once a minute."""
        self.refusals += 1
        now = self.loop.time()
        if now - self.last_refusal_log >= REFUSAL_LOG_INTERVAL:
            self.last_refusal_log = now
            log.warning(
                "refusing connections from %s: %d already open (cap); %d refused so far",
                address,
                self.per_address_cap,
                self.refusals,
            )


Queued = tuple[Request | Reply, bool]


class Connection(asyncio.Protocol):
    """One client connection."""

    def __init__(self, shared: Shared) -> None:
        self._shared = shared
        self._endpoint = shared.endpoint
        self._repeater = shared.repeater
        self._encoder = shared.encoder
        self._date = shared.date
        self._loop = shared.loop
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._client: str | None = None
        self._local_port: int | None = None
        # the request being parsed
        self._phase = _BETWEEN
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self._body_size = 0
        # Bytes read while in a head: reads are parsed 1 KB at a time, so this bounds a
        # head to MAX_HEAD (within 1 KB) whether it comes in one write or a trickle.
        self._recv_head = 0
        self._declared: bytes | None = None  # Content-Length as sent
        self._expect_continue = False
        # flow
        self._budget = PIPELINE_BUDGET
        self._pending: memoryview | None = None  # read, not parsed yet
        self._queue: deque[Queued] = deque()  # parsed, waiting behind a held reply
        self._held = False  # a reply waits for its delay or its ``wait``
        self._timer: asyncio.TimerHandle | None = None
        self._waiting: tuple[asyncio.Future[Reply], bool, bool] | None = None
        self._reading = True
        self._write_paused = False
        self._last = False  # nothing after the current request is read (close or error)
        self._closing = False  # nothing more is written
        self._lost = False
        self._eof = False
        # deadlines
        self._deadline = 0.0
        self._deadline_phase = _BETWEEN  # the phase the deadline was set for (-1: stale)
        # the chunk being read: body bytes before it, the deadline phase it stands for
        self._chunk_start = 0
        self._phase_under_chunk = _BETWEEN
        self.last_active = 0.0
        # The repeat fast path: a read that is byte for byte the last single request of
        # this connection is answered from its ticket, without the parser (``_again``).
        self._request: Request | None = None  # the last request parsed
        self._raw = b""  # a read that held exactly one plain request
        self._ticket: Ticket | None = None  # the endpoint's ticket for ``_raw``, once repeated
        self._sent: tuple[Reply, bytes, bytes] | None = None  # reply, date line, bytes sent

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass
        shared = self._shared
        peer = transport.get_extra_info("peername")
        local = transport.get_extra_info("sockname")
        self._client = client = peer[0] if isinstance(peer, tuple) else None
        self._local_port = local[1] if isinstance(local, tuple) else None
        shared.live.add(self)
        if client is not None:
            count = shared.per_address.get(client, 0) + 1
            shared.per_address[client] = count
            if count > shared.per_address_cap:
                # Closed before reading a byte: an answer would cost what the cap saves, and
                # the client could not read it reliably anyway (its request is still coming).
                self._closing = self._last = True
                transport.close()
                shared.refused(client)
                return
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            room = shared.room
            if room is not None and sock.fileno() >= room.threshold:
                room.make(self, sock.fileno(), self._loop.time())
        # Until its first byte, a new connection is idle like a kept-alive one: load
        # generators and pools may open connections well before they ask anything.
        self.last_active = self._date.second

    def connection_lost(self, exc: Exception | None) -> None:
        shared = self._shared
        self._lost = self._closing = self._last = True
        shared.live.discard(self)
        shared.deadlines.discard(self)
        client = self._client
        if client is not None:
            left = shared.per_address.get(client, 1) - 1
            if left > 0:
                shared.per_address[client] = left
            else:
                shared.per_address.pop(client, None)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._waiting is not None:
            future = self._waiting[0]
            self._waiting = None
            future.remove_done_callback(self._resolved)
            future.add_done_callback(settled)  # still logged if it fails; nobody to tell
        self._queue.clear()
        self._pending = None
        # The parser holds this connection's callbacks: dropping it breaks the cycle, so a
        # closed connection is freed at once rather than by the collector (one per close).
        self._parser = None  # type: ignore[assignment]  # never parsed again: closed

    def data_received(self, data: bytes) -> None:
        if self._closing or self._pending is not None or len(data) > SLICE:
            self._received_more(data)
            return
        if data == self._raw and self._phase == _BETWEEN and not self._held and self._again():
            return  # the same poll as last time, answered unparsed
        # The hot path, ``_feed`` and ``_parse`` inlined: one read of a request or a few.
        self._budget = PIPELINE_BUDGET
        whole = self._phase == _BETWEEN  # the read starts a request
        if self._phase != _BODY:
            self._recv_head += len(data)
        try:
            self._parser.feed_data(data)
        except Exception as exc:  # an Upgrade, or bytes that are not HTTP
            self._raw = b""
            rest = self._parse_stopped(exc, data)
            if rest:
                self._parse(rest)
        else:
            if whole and self._budget == PIPELINE_BUDGET - 1 and self._phase == _BETWEEN:
                self._answered_one(data)  # the read was one whole request
        if self._phase == _HEAD and self._recv_head > MAX_HEAD and not self._last:
            self._fail(HEAD_TOO_LARGE)
        if self._phase != self._deadline_phase and not self._closing:
            self._track(data)

    def _answered_one(self, data: bytes) -> None:
        """``data`` was one whole request, just answered: when the connection sent the same
        bytes before, ask the endpoint for a ticket to answer them unparsed from now on."""
        request = self._request
        if (
            request is None
            or self._held
            or self._last
            or self._repeater is None
            or request.method != "GET"
        ):
            self._raw = b""
            return
        if data != self._raw:
            self._raw, self._ticket = data, None  # seen once: parsed again next time
            return
        self._ticket = self._repeater.ticket(request)
        if self._ticket is None:
            self._raw = b""

    def _again(self) -> bool:
        """Answer the connection's repeated poll from its ticket (False: parse it)."""
        ticket = self._ticket
        if ticket is None or self._repeater is None:
            return False
        reply = self._repeater.again(ticket)
        if reply is None:
            return False
        self.last_active = self._date.second
        if reply.wait is not None or reply.delay > 0:
            self._deliver(reply, False, False)
            return True
        date = self._date.line()
        sent = self._sent
        if sent is not None and sent[0] is reply and sent[1] is date:
            data = sent[2]  # the very bytes sent last time (same document, same second)
        else:
            data = self._encoder.encode(reply, False)
            self._sent = (reply, date, data)
        self._write(data, False)
        return True

    def _received_more(self, data: bytes) -> None:
        if self._closing:
            return  # lingering after a refusal: drained, not parsed
        if self._pending is not None:  # only if a read raced a pause
            self._pending = memoryview(bytes(self._pending) + data)
            return
        self._feed(data)

    def eof_received(self) -> bool:
        """A half-close still gets the replies it is owed; then we close."""
        if self._closing:
            return False
        self._eof = True
        return self._held or bool(self._queue) or self._pending is not None

    def pause_writing(self) -> None:
        self._write_paused = True
        self._set_reading(False)  # a client that does not read its replies gets no more

    def resume_writing(self) -> None:
        self._write_paused = False
        self._continue()

    # -- httptools callbacks
    def on_message_begin(self) -> None:
        self._phase = _HEAD
        self._url = b""
        self._headers = []
        self._body = []
        self._body_size = 0

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name in RULE_HEADERS:  # the endpoint looks at no other header
            self._headers.append((name, value))
        elif name == b"content-length":
            self._declared = value
        elif name == b"expect" and value.strip().lower() == b"100-continue":
            self._expect_continue = True

    def on_headers_complete(self) -> None:
        self._phase = _BODY
        self._recv_head = 0
        declared = self._declared
        if declared is not None:
            self._declared = None
            if int(declared) > MAX_BODY:  # the parser has checked that it is a number
                self._fail(TOO_LARGE)  # before any 100 Continue, and without reading it
                return
        if self._expect_continue:
            self._expect_continue = False
            if not (self._held or self._last) and self._transport is not None:
                self._transport.write(CONTINUE)  # don't make PowerShell and curl wait

    def on_body(self, body: bytes) -> None:
        if self._last:
            return
        size = self._body_size + len(body)
        self._body_size = size
        if size > MAX_BODY:  # a chunked body announces no total: refused once past it
            self._fail(TOO_LARGE)
            return
        self._body.append(body)

    def on_chunk_header(self) -> None:
        """A chunk's size line was parsed (httptools does not say the size: see
        ``_check_chunk``, run once the read is parsed, if the chunk is still open then)."""
        if self._deadline_phase != _CHUNK_OPEN:
            self._phase_under_chunk = self._deadline_phase
            self._deadline_phase = _CHUNK_OPEN
        self._chunk_start = self._body_size

    def on_chunk_complete(self) -> None:
        if self._deadline_phase == _CHUNK_OPEN:
            self._deadline_phase = self._phase_under_chunk

    def on_message_complete(self) -> None:
        if self._last:
            return
        self._phase = _BETWEEN
        self.last_active = self._date.second  # a request, not any byte (CRLFs are free)
        if self._deadline_phase:
            self._deadline_phase = -1  # the next request gets a deadline of its own
        self._budget -= 1
        try:
            url = httptools.parse_url(self._url)
        except httptools.HttpParserInvalidURLError:
            self._fail(MALFORMED)
            return
        close = not self._parser.should_keep_alive()
        if close:
            self._last = True
        request = Request(
            method=self._parser.get_method().decode("latin-1"),
            path=url.path.decode("latin-1"),
            query=url.query or b"",
            headers=self._headers,
            client=self._client,
            local_port=self._local_port,
            body=b"".join(self._body),
        )
        self._request = request
        if self._held:
            self._queue.append((request, close))
            return
        reply = self._endpoint.handle(request)  # as ``_answer``, inlined: the hot path
        if reply.wait is None and reply.delay <= 0 and request.method != "HEAD":
            self._write(self._encoder.encode(reply, close), close)
        else:
            self._deliver(reply, request.method == "HEAD", close)

    # -- reading
    def _feed(self, data: bytes | memoryview) -> None:
        """Parse ``data``; past the budget or under back-pressure, keep the rest for later."""
        self._budget = PIPELINE_BUDGET
        if len(data) <= SLICE:
            self._parse(data)
        else:
            view = memoryview(data)
            size = len(view)
            start = 0
            while True:
                self._parse(view[start : start + SLICE])
                start += SLICE
                if start >= size or self._last:
                    break
                if self._budget <= 0 or self._held or self._write_paused:
                    self._pending = view[start:]
                    self._set_reading(False)
                    if not (self._held or self._write_paused):
                        self._loop.call_soon(self._continue)  # the others' turn first
                    return
        if self._phase != self._deadline_phase and not self._closing:
            self._track(data)

    def _parse(self, chunk: bytes | memoryview) -> None:
        rest: bytes | memoryview | None = chunk
        while rest:
            piece, rest = rest, None
            if self._phase != _BODY:
                self._recv_head += len(piece)
            try:
                self._parser.feed_data(piece)
            except Exception as exc:
                rest = self._parse_stopped(exc, piece)
        if self._phase == _HEAD and self._recv_head > MAX_HEAD and not self._last:
            self._fail(HEAD_TOO_LARGE)

    def _parse_stopped(
        self, exc: Exception, chunk: bytes | memoryview
    ) -> bytes | memoryview | None:
        """The parser stopped inside ``chunk``, at an Upgrade (the rest of ``chunk`` is
        returned, to be parsed next) or at bytes that are not HTTP."""
        if isinstance(exc, httptools.HttpParserUpgrade):
            # The request was answered; HTTP lets a server ignore Upgrade (curl --http2
            # sends one), so read on with a fresh parser from where the request ended.
            offset = exc.args[0] if exc.args else len(chunk)
            self._parser = httptools.HttpRequestParser(self)
            return None if self._last else chunk[offset:]
        if not isinstance(exc, httptools.HttpParserError):
            raise exc
        if isinstance(exc, httptools.HttpParserCallbackError):
            log.error("request handling failed", exc_info=exc)
        if not self._last:
            self._fail(MALFORMED)
        return None

    def _set_reading(self, on: bool) -> None:
        if on == self._reading or self._lost or self._transport is None:
            return
        if on:
            if self._eof:
                return
            self._reading = True
            self._transport.resume_reading()
            if self._deadline_phase > 0:  # the client could not send while we did not read
                self._deadline = self._loop.time() + self._timeout(self._deadline_phase)
        else:
            self._reading = False
            self._transport.pause_reading()

    def _continue(self) -> None:
        """Go on after a held reply was sent, the client read its replies, or a turn ended."""
        if self._closing:
            return
        queue = self._queue
        while queue and not self._held:
            item, close = queue.popleft()
            if isinstance(item, Request):
                self._answer(item, close)
            else:
                self._write(self._encoder.encode(item, True), True, linger=True)
            if self._closing:
                return
        if self._held or self._write_paused:
            return
        pending = self._pending
        if pending is not None:
            self._pending = None
            self._feed(pending)
            if self._pending is not None or self._held or self._write_paused or self._closing:
                return
        if self._eof:
            self.close()
        else:
            self._set_reading(True)

    # -- answering
    def _answer(self, request: Request, close: bool) -> None:
        reply = self._endpoint.handle(request)
        if reply.wait is None and reply.delay <= 0 and request.method != "HEAD":
            self._write(self._encoder.encode(reply, close), close)
        else:
            self._deliver(reply, request.method == "HEAD", close)

    def _deliver(self, reply: Reply, head: bool, close: bool) -> None:
        """Send ``reply`` now, after its delay, or once its ``wait`` resolves."""
        if reply.wait is not None:
            self._await(reply, head, close)
            return
        if reply.status < 0:  # an injected fault: no answer at all
            self._hang_up(reply.status == RESET)
            return
        if head:
            reply = replace(reply, body=b"")  # a HEAD answer never has a body
        if reply.delay > 0:
            self._held = True
            self._set_reading(False)
            self._timer = self._loop.call_later(reply.delay, self._release, reply, close)
        else:
            self._write(self._encoder.encode(reply, close), close)

    def _release(self, reply: Reply, close: bool) -> None:
        self._timer = None
        self._held = False
        self._write(self._encoder.encode(reply, close), close)
        self._continue()

    def _await(self, reply: Reply, head: bool, close: bool) -> None:
        assert reply.wait is not None
        self._held = True
        self._set_reading(False)
        future = asyncio.ensure_future(reply.wait, loop=self._loop)
        waits = self._shared.waits
        waits.add(future)
        future.add_done_callback(waits.discard)
        self._waiting = (future, head, close)
        future.add_done_callback(self._resolved)

    def _resolved(self, future: asyncio.Future[Reply]) -> None:
        if self._waiting is None or self._waiting[0] is not future:
            return
        _, head, close = self._waiting
        self._waiting = None
        self._held = False
        self._deliver(settled(future), head, close)
        if not self._held:
            self._continue()

    def _hang_up(self, reset: bool) -> None:
        """Drop the connection unanswered: a FIN, or with ``reset`` an RST."""
        transport = self._transport
        if transport is None or self._closing:
            return
        self._closing = self._last = True
        self._shared.deadlines.discard(self)
        self._queue.clear()
        self._pending = None
        sock = transport.get_extra_info("socket")
        if reset and sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        else:
            transport.close()

    def _fail(self, reply: Reply) -> None:
        """Answer ``reply`` in order, then close; nothing more is read."""
        self._last = True
        if self._held:
            self._queue.append((reply, True))
        else:
            self._write(self._encoder.encode(reply, True), True, linger=True)

    def _write(self, data: bytes, close: bool, *, linger: bool = False) -> None:
        transport = self._transport
        if transport is None or self._closing:
            return
        transport.write(data)
        if not close:
            return
        self._closing = self._last = True
        self._shared.deadlines.discard(self)
        self._queue.clear()
        self._pending = None
        if linger and not self._eof and transport.can_write_eof():
            # Half-close and drain for a moment: closing with unread input would reset the
            # connection, and the client might lose the answer that says what was wrong.
            transport.write_eof()
            self._timer = self._loop.call_later(LINGER, transport.close)
            self._set_reading(True)
        else:
            transport.close()

    # -- deadlines
    def _timeout(self, phase: int) -> float:
        shared = self._shared
        return shared.header_timeout if phase == _HEAD else shared.body_timeout

    def _track(self, read: bytes | memoryview) -> None:
        """Start, move or drop the deadline when the phase of the request changed; read
        the size of a chunk left open by ``read`` (the bytes just parsed)."""
        if self._deadline_phase == _CHUNK_OPEN:
            self._deadline_phase = self._phase_under_chunk
            if self._check_chunk(read) or self._phase == self._deadline_phase:
                return
        phase = self._deadline_phase = self._phase
        if phase == _BETWEEN:
            self._deadline = 0.0
            self._shared.deadlines.discard(self)
        else:
            self._deadline = self._loop.time() + self._timeout(phase)
            self._shared.deadlines.add(self)

    def _check_chunk(self, read: bytes | memoryview) -> bool:
        """413 at once (and True) when the open chunk's size takes the body past
        ``MAX_BODY``, rather than waiting for bytes that would be refused anyway.

        The parser has just read the chunk's size line and then the chunk's data so far,
        the tail of ``read``: the line ends just before that data. When the line began in
        an earlier read, the digits seen (if they are all the line shows) are its last
        ones, so still a lower bound of the size.
        """
        end = len(read) - (self._body_size - self._chunk_start)
        if end <= 0:
            return False  # the size line was in an earlier read: the body deadline rules
        line = bytes(read[max(0, end - 2 * SLICE) : end]).rstrip(b"\r\n")
        start = line.rfind(b"\n") + 1
        match = _HEX_DIGITS.match(line, start)
        digits = match[0] if match else b""
        if start == 0 and len(digits) != len(line):
            return False  # an extension, and the digits before it unseen
        if self._chunk_start + int(digits or b"0", 16) <= MAX_BODY:
            return False
        self._fail(TOO_LARGE)
        return True

    def expire_if_late(self, now: float) -> None:
        """408 and close when the request's deadline passed while we were reading."""
        if not self._reading or self._closing or now < self._deadline:
            return
        if self._phase == _BETWEEN:
            self._track(b"")  # no request under way after all: nothing is late
        else:
            self._fail(TIMED_OUT)

    def close_if_idle(self, now: float) -> None:
        """Close a connection that has sent no request for ``IDLE_TIMEOUT`` (nothing pending).

        Bytes that are not a request do not count: llhttp skips CRLFs between requests, so
        a client trickling them would otherwise hold its connection for ever.
        """
        if not (self._held or self._queue) and now - self.last_active > IDLE_TIMEOUT:
            self.close()

    def shed_rank(self) -> tuple[int, float] | None:
        """For ``Room``: a request under way nearest its deadline first, then the longest
        idle; never a connection a reply is held for, nor one closing already."""
        if self._closing or self._held or self._queue:
            return None
        if self._phase != _BETWEEN:
            return (0, self._deadline)
        return (1, self.last_active)

    def close(self) -> None:
        """Close now (idle, server shutdown, or shed for room)."""
        if self._transport is not None and not self._lost:
            self._closing = self._last = True
            self._transport.close()
