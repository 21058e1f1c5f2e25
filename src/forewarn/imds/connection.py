"""One client connection of the endpoint's HTTP/1.1 server: answer in order, hold back.

The hot path is one request per read: hand the read to the reader (``reading.py``: httptools,
limits, deadlines), which hands the request to the endpoint, and write a pre-framed reply;
a poll sent again byte for byte skips the parser (``repeats.py``). Everything else exists
so that one client cannot hurt the others:

- replies leave in request order; a reply that must wait (``Reply.delay``, ``Reply.wait``)
  holds everything behind it, and the requests behind it are not even handled until it is
  sent, so a pipelined GET after an approval sees the approval;
- at most ``PIPELINE_BUDGET`` requests (give or take one ``SLICE`` of input) are answered
  per connection per loop iteration; the rest waits, unparsed, for the next iteration;
- nothing is read from a client that is not reading its replies (write high-water mark),
  nor while a reply is held;
- a refused request (too large, too slow, malformed) is answered, then the connection
  half-closes and lingers, reading and discarding what the client still sends within the
  bounds of ``lingering.py``, so that the client can read why;
- when descriptors run short, the slowest requests and longest idle connections are
  closed to keep room for new VMs (``shedding.py``).
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections import deque
from dataclasses import replace

from forewarn.imds.deferred import settled
from forewarn.imds.framing import CONTINUE
from forewarn.imds.lingering import Linger
from forewarn.imds.messages import RESET, Reply, Request
from forewarn.imds.peers import Peer
from forewarn.imds.reading import BETWEEN, SLICE, RequestReader
from forewarn.imds.repeats import Book, Repeat
from forewarn.imds.shared import Shared

__all__ = ["IDLE_TIMEOUT", "PIPELINE_BUDGET", "Connection"]

IDLE_TIMEOUT = 300.0
#: Requests answered per connection before other connections get their turn.
PIPELINE_BUDGET = 32

Queued = tuple[Request | Reply, bool]


class Connection(asyncio.Protocol):
    """One client connection."""

    __slots__ = (
        "_book",
        "_budget",
        "_close",
        "_eof",
        "_held",
        "_linger",
        "_lost",
        "_peer",
        "_pending",
        "_queue",
        "_reader",
        "_reading",
        "_repeat",
        "_request",
        "_shared",
        "_timer",
        "_transport",
        "_waiting",
        "_write_paused",
        "client",
        "closing",
        "last_active",
        "local_port",
    )

    # Set by ``connection_made``, which asyncio calls before anything else (not here
    # first: a closed connection costs each store twice).
    _transport: asyncio.Transport
    #: Where requests come from.
    client: str | None
    #: This connection's address's record (``peers.py``).
    _peer: Peer
    #: What this connection's address sent before (None: nothing answered unparsed).
    _book: Book | None
    #: The second of its last request (or of its connecting, until it sent one).
    last_active: float

    def __init__(self, shared: Shared, local_port: int | None) -> None:
        """``local_port``: the listener's, hence every accepted connection's (asked once
        per listener, not once per connection: a system call each)."""
        self._shared = shared
        #: Made at the first read that is not a repeated poll (``repeats.py``).
        self._reader: RequestReader | None = None
        self._repeat: Repeat | None = None  # the last one answered from the book
        self.local_port = local_port
        self._request: Request | None = None  # the last request read
        self._close = False  # ... and whether it asked to close
        # flow
        self._budget = PIPELINE_BUDGET
        self._pending: memoryview | None = None  # read, not parsed yet
        #: Parsed, waiting behind a held reply (made when first needed: most never are).
        self._queue: deque[Queued] | None = None
        self._held = False  # a reply waits for its delay or its ``wait``
        self._timer: asyncio.TimerHandle | None = None
        self._waiting: tuple[asyncio.Future[Reply], bool, bool] | None = None
        self._reading = True
        self._write_paused = False
        #: Nothing more is written.
        self.closing = False
        self._lost = False
        self._eof = False
        #: After a refusal: what is still read and discarded, and until when.
        self._linger: Linger | None = None

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass
        shared = self._shared
        # Until its first byte, a new connection is idle like a kept-alive one: load
        # generators and pools may open connections well before they ask anything.
        self.last_active = shared.date.second
        peer = transport.get_extra_info("peername")
        self.client = client = peer[0] if isinstance(peer, tuple) else None
        shared.live.add(self)
        self._peer = record = shared.peers[client]
        record.open += 1
        if record.open > shared.per_address_cap and client is not None:
            # Closed before reading a byte: an answer would cost what the cap saves, and
            # the client could not read it reliably anyway (its request is still coming).
            self.closing = True
            self._book = None
            transport.close()
            shared.refused(client)
            return
        book = record.books.get(self.local_port)
        if book is None:
            book = shared.repeats.new_book(record.books, self.local_port)
        self._book = book
        # (No TCP_NODELAY to set: asyncio's and uvloop's transports set it themselves.)
        room = shared.room
        if room is not None and len(shared.live) >= room.watch_from:
            sock = transport.get_extra_info("socket")
            if sock is not None and sock.fileno() >= room.threshold:
                room.make(self, sock.fileno(), shared.loop.time())

    def _new_reader(self) -> RequestReader:
        """The parser, for the first read that is not a repeated poll."""
        reader = self._reader = RequestReader(self, self._shared, self.client, self.local_port)
        return reader

    def connection_lost(self, exc: Exception | None) -> None:
        shared = self._shared
        self._lost = self.closing = True
        shared.live.discard(self)
        self._peer.open -= 1
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._waiting is not None:
            future = self._waiting[0]
            self._waiting = None
            future.remove_done_callback(self._resolved)
            future.add_done_callback(settled)  # still logged if it fails; nobody to tell
        self._pending = None
        reader = self._reader
        if reader is not None:  # (without one, no request was ever under way)
            reader.last = True
            shared.deadlines.discard(self)
            self._queue = None
            reader.drop()

    def data_received(self, data: bytes) -> None:
        if self.closing or self._pending is not None or len(data) > SLICE:
            self._received_more(data)
            return
        reader = self._reader
        repeat = self._repeat  # this connection's last one (no hashing of ``data``)
        if repeat is None or data != repeat.raw:
            book = self._book
            repeat = self._repeat = None if book is None else book.get(data)
        if (
            repeat is not None
            and repeat.ticket is not None
            and not self._held
            and (reader is None or reader.phase == BETWEEN)
        ):  # a poll this address sent before, on this connection or another one
            shared = self._shared
            answer = shared.repeats.again(repeat, repeat.ticket)
            if answer is not None:
                self.last_active = shared.date.second
                if isinstance(answer, bytes):
                    transport = self._transport
                    if not repeat.close:  # ``_write``, inlined: the hot path
                        transport.write(answer)
                    elif reader is None:  # the connection's one request: ``_write``, inlined
                        self.closing = True
                        transport.write(answer)
                        transport.close()
                    else:
                        self._write(answer, True)
                else:
                    self._deliver(answer, False, repeat.close)
                return
        if reader is None:
            reader = self._new_reader()
        # The hot path, ``_feed`` inlined: one read of a request or a few.
        self._budget = PIPELINE_BUDGET
        whole = reader.phase == BETWEEN  # the read starts a request
        if (
            reader.read(data)
            and whole
            and self._budget == PIPELINE_BUDGET - 1
            and reader.phase == BETWEEN
            and self._book is not None
            and not self._held
        ):  # the read was one whole request, answered now: remember it when it is plain
            request = self._request
            assert request is not None
            self._shared.repeats.answered(self._book, data, request, self._close)

    def _received_more(self, data: bytes) -> None:
        if self.closing:
            linger = self._linger
            if linger is not None and not linger.took(len(data), self._shared.loop.time()):
                self._linger = None
                self._transport.close()  # past the bound: no more is read
            return  # lingering after a refusal: drained, not parsed
        if self._pending is not None:  # only if a read raced a pause
            self._pending = memoryview(bytes(self._pending) + data)
            return
        self._feed(data)

    def eof_received(self) -> bool:
        """A half-close still gets the replies it is owed; then we close."""
        if self.closing:
            return False
        self._eof = True
        return self._held or bool(self._queue) or self._pending is not None

    def pause_writing(self) -> None:
        self._write_paused = True
        self._set_reading(False)  # a client that does not read its replies gets no more

    def resume_writing(self) -> None:
        self._write_paused = False
        self._continue()

    # -- what the reader reads (``RequestSink``)
    def request(self, request: Request, close: bool) -> None:
        shared = self._shared
        self.last_active = shared.date.second  # a request, not any byte (CRLFs are free)
        self._budget -= 1
        self._request = request
        self._close = close
        if self._held:
            self._hold_back((request, close))
            return
        reply = shared.endpoint.handle(request)  # as ``_answer``, inlined: the hot path
        if reply.wait is None and reply.delay <= 0 and request.method != "HEAD":
            self._write(shared.encoder.encode(reply, close), close)
        else:
            self._deliver(reply, request.method == "HEAD", close)

    def refuse(self, reply: Reply, coming: int | None = None) -> None:
        """Answer ``reply`` in order, then close; nothing more is parsed. ``coming``: the
        bytes of the body still due, when declared (past ``LINGER_BYTES``: no lingering)."""
        assert self._reader is not None  # (only the reader refuses)
        self._reader.last = True
        linger = Linger.worth(coming)
        if self._held:
            self._hold_back((reply, linger))
        else:
            self._write(self._shared.encoder.encode(reply, True), True, linger=linger)

    def send_continue(self) -> None:
        reader = self._reader
        if self._held or (reader is not None and reader.last):
            return
        self._transport.write(CONTINUE)

    def _hold_back(self, item: Queued) -> None:
        """Queue ``item`` behind the held reply."""
        if self._queue is None:
            self._queue = deque()
        self._queue.append(item)

    # -- reading
    def _feed(self, data: bytes | memoryview) -> None:
        """Parse ``data``; past the budget or under back-pressure, keep the rest for later."""
        self._budget = PIPELINE_BUDGET
        reader = self._reader
        if reader is None:
            reader = self._new_reader()
        if len(data) <= SLICE:
            reader.parse(data)
        else:
            view = memoryview(data)
            size = len(view)
            start = 0
            while True:
                reader.parse(view[start : start + SLICE])
                start += SLICE
                if start >= size or reader.last:
                    break
                if self._budget <= 0 or self._held or self._write_paused:
                    self._pending = view[start:]
                    self._set_reading(False)
                    if not (self._held or self._write_paused):
                        self._shared.loop.call_soon(self._continue)  # the others' turn first
                    return
        reader.read_done(data)

    def _set_reading(self, on: bool) -> None:
        if on == self._reading or self._lost:
            return
        if on:
            if self._eof:
                return
            self._reading = True
            self._transport.resume_reading()
            if self._reader is not None:
                self._reader.restart_deadline()
        else:
            self._reading = False
            self._transport.pause_reading()

    def _continue(self) -> None:
        """Go on after a held reply was sent, the client read its replies, or a turn ended."""
        if self.closing:
            return
        queue = self._queue
        while queue and not self._held:
            item, close = queue.popleft()
            if isinstance(item, Request):
                self._answer(item, close)
            else:  # a refusal (``close``: whether to linger)
                self._write(self._shared.encoder.encode(item, True), True, linger=close)
            if self.closing:
                return
        if self._held or self._write_paused:
            return
        pending = self._pending
        if pending is not None:
            self._pending = None
            self._feed(pending)
            if self._pending is not None or self._held or self._write_paused or self.closing:
                return
        if self._eof:
            self.close()
        else:
            self._set_reading(True)

    # -- answering
    def _answer(self, request: Request, close: bool) -> None:
        reply = self._shared.endpoint.handle(request)
        if reply.wait is None and reply.delay <= 0 and request.method != "HEAD":
            self._write(self._shared.encoder.encode(reply, close), close)
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
            self._timer = self._shared.loop.call_later(reply.delay, self._release, reply, close)
        else:
            self._write(self._shared.encoder.encode(reply, close), close)

    def _release(self, reply: Reply, close: bool) -> None:
        self._timer = None
        self._held = False
        self._write(self._shared.encoder.encode(reply, close), close)
        self._continue()

    def _await(self, reply: Reply, head: bool, close: bool) -> None:
        assert reply.wait is not None
        self._held = True
        self._set_reading(False)
        future = asyncio.ensure_future(reply.wait, loop=self._shared.loop)
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
        if self.closing:
            return
        self._stop()
        sock = transport.get_extra_info("socket")
        if reset and sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        else:
            transport.close()

    def _stop(self) -> None:
        """Nothing more is read, answered or written (the connection is closing)."""
        self.closing = True
        self._pending = None
        reader = self._reader
        if reader is not None:  # (without one, no request was ever under way)
            reader.last = True
            self._shared.deadlines.discard(self)
            self._queue = None

    def _write(self, data: bytes, close: bool, *, linger: bool = False) -> None:
        transport = self._transport
        if self.closing:
            return
        transport.write(data)
        if not close:
            return
        self._stop()
        if linger and not self._eof and transport.can_write_eof():
            # Half-close and drain (``lingering.py``): closing with unread input would reset
            # the connection, and the client would lose the answer that says what was wrong.
            transport.write_eof()
            loop = self._shared.loop
            self._linger = Linger(loop.time())
            self._timer = loop.call_at(self._linger.deadline(), self._linger_on)
            self._set_reading(True)
        else:
            transport.close()

    def _linger_on(self) -> None:
        """The lingering's deadline came: close, unless the client sent more since."""
        linger = self._linger
        if linger is None:
            return  # closed meanwhile (past the bound, or shed for room)
        loop = self._shared.loop
        if loop.time() < linger.deadline():
            self._timer = loop.call_at(linger.deadline(), self._linger_on)
        else:
            self._timer = self._linger = None
            self._transport.close()

    # -- what the server's timer, and its shedding, look at
    def expire_if_late(self, now: float) -> None:
        """408 and close when the request's deadline passed while we were reading."""
        if self._reading and not self.closing and self._reader is not None:
            self._reader.expire_if_late(now)

    def close_if_idle(self, now: float) -> None:
        """Close a connection that has sent no request for ``IDLE_TIMEOUT`` (nothing pending).

        Bytes that are not a request do not count: llhttp skips CRLFs between requests, so
        a client trickling them would otherwise hold its connection for ever.
        """
        if not (self._held or self._queue) and now - self.last_active > IDLE_TIMEOUT:
            self.close()

    def shed_rank(self) -> tuple[int, float] | None:
        """For ``Room``: a request under way nearest its deadline first, then the longest
        idle; never a connection a reply is held for, nor one closing already (but one
        lingering after a refusal goes first)."""
        if self.closing:
            linger = self._linger
            return None if linger is None or self._lost else (0, linger.deadline())
        if self._held or self._queue:
            return None
        reader = self._reader
        if reader is not None and reader.phase != BETWEEN:
            return (0, reader.deadline)
        return (1, self.last_active)

    def close(self) -> None:
        """Close now (idle, server shutdown, or shed for room)."""
        if not self._lost:
            self.closing = True
            self._linger = None
            if self._reader is not None:
                self._reader.last = True
            self._transport.close()
