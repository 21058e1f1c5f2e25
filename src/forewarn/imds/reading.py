"""Reading requests off one connection: httptools' callbacks, the request being read, the
limits on its size, and the time it has to arrive.

- a request head must arrive whole within ``header_timeout`` and its body within
  ``body_timeout`` (a trickle of bytes does not reset them), else 408 and close;
- a head over ``MAX_HEAD`` (431) or a body over ``MAX_BODY`` (413, refused as soon as its
  declared length is known, before any ``100 Continue``; for a chunked body, as soon as a
  chunk's size line says so) closes the connection.

What is read goes to the connection (``RequestSink``), which answers in order and closes.
"""

from __future__ import annotations

import logging
import re
from typing import Protocol

import httptools

from forewarn.imds.endpoint import MAX_BODY, RULE_HEADERS, TOO_LARGE
from forewarn.imds.framing import HEAD_TOO_LARGE, MALFORMED, TIMED_OUT
from forewarn.imds.messages import Reply, Request
from forewarn.imds.shared import Expiring, Shared

__all__ = ["BETWEEN", "BODY", "HEAD", "MAX_HEAD", "SLICE", "RequestReader", "RequestSink"]

log = logging.getLogger(__name__)

MAX_HEAD = 64 * 1024
#: Input parsed at a time (between two looks at the connection's budget and back-pressure).
SLICE = 1024

# Phases of the request being read (``RequestReader.phase``).
BETWEEN, HEAD, BODY = 0, 1, 2
#: ``_deadline_phase`` while a chunk's size is unread: the check after each read (which
#: looks for a changed phase) then reads the size line; no other request pays for it.
_CHUNK_OPEN = 3
_HEX_DIGITS = re.compile(rb"[0-9A-Fa-f]*")


class RequestSink(Expiring, Protocol):
    """The connection a reader reads for."""

    #: Nothing more is written (nor is a deadline started).
    closing: bool

    def request(self, request: Request, close: bool) -> None:
        """A whole request was read (``close``: the client asked for the last one)."""
        ...

    def refuse(self, reply: Reply, coming: int | None = None) -> None:
        """Answer ``reply`` in order, then close; nothing more is parsed (``coming``: the
        bytes of the body still due, when known: ``lingering.py``)."""
        ...

    def send_continue(self) -> None:
        """The client waits for ``100 Continue`` before it sends the body."""
        ...


class RequestReader:
    """The httptools parser of one connection and the request it is reading."""

    __slots__ = (
        "_body",
        "_body_size",
        "_chunk_start",
        "_deadline_phase",
        "_declared",
        "_expect_continue",
        "_headers",
        "_parser",
        "_phase_under_chunk",
        "_recv_head",
        "_shared",
        "_sink",
        "_url",
        "client",
        "deadline",
        "last",
        "local_port",
        "phase",
    )

    def __init__(
        self, sink: RequestSink, shared: Shared, client: str | None, local_port: int | None
    ) -> None:
        self._sink = sink
        self._shared = shared
        self._parser = httptools.HttpRequestParser(self)
        #: Where requests come from.
        self.client = client
        self.local_port = local_port
        self.phase = BETWEEN
        #: Nothing after the current request is read (close or error).
        self.last = False
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self._body_size = 0
        # Bytes read while in a head: reads are parsed 1 KB at a time, so this bounds a
        # head to MAX_HEAD (within 1 KB) whether it comes in one write or a trickle.
        self._recv_head = 0
        self._declared: bytes | None = None  # Content-Length as sent
        self._expect_continue = False
        self.deadline = 0.0
        self._deadline_phase = BETWEEN  # the phase the deadline was set for (-1: stale)
        # the chunk being read: body bytes before it, the deadline phase it stands for
        self._chunk_start = 0
        self._phase_under_chunk = BETWEEN

    def drop(self) -> None:
        """The connection is gone: the parser holds this reader's callbacks and this reader
        its connection, so dropping both frees a closed connection at once rather than by
        the collector (one per close)."""
        self._parser = None  # type: ignore[assignment]  # never parsed again: closed
        self._sink = None  # type: ignore[assignment]

    # -- reading
    def read(self, data: bytes) -> bool:
        """Parse one read of at most ``SLICE`` bytes (the hot path: one request, or a few);
        False when the parser stopped inside it (an Upgrade, or bytes that are not HTTP)."""
        if self.phase != BODY:
            self._recv_head += len(data)
        try:
            self._parser.feed_data(data)
        except Exception as exc:
            rest = self._stopped(exc, data)
            if rest:
                self.parse(rest)
            parsed = False
        else:
            parsed = True
        if self.phase == HEAD and self._recv_head > MAX_HEAD and not self.last:
            self._sink.refuse(HEAD_TOO_LARGE)
        if self.phase != self._deadline_phase and not self._sink.closing:
            self._track(data)
        return parsed

    def parse(self, chunk: bytes | memoryview) -> None:
        """Parse ``chunk`` (at most ``SLICE`` bytes); ``read_done`` once the read is parsed."""
        rest: bytes | memoryview | None = chunk
        while rest:
            piece, rest = rest, None
            if self.phase != BODY:
                self._recv_head += len(piece)
            try:
                self._parser.feed_data(piece)
            except Exception as exc:
                rest = self._stopped(exc, piece)
        if self.phase == HEAD and self._recv_head > MAX_HEAD and not self.last:
            self._sink.refuse(HEAD_TOO_LARGE)

    def read_done(self, read: bytes | memoryview) -> None:
        """``read`` is parsed (as far as the connection's turn went): start, move or drop
        the deadline."""
        if self.phase != self._deadline_phase and not self._sink.closing:
            self._track(read)

    def _stopped(self, exc: Exception, chunk: bytes | memoryview) -> bytes | memoryview | None:
        """The parser stopped inside ``chunk``, at an Upgrade (the rest of ``chunk`` is
        returned, to be parsed next) or at bytes that are not HTTP."""
        if isinstance(exc, httptools.HttpParserUpgrade):
            # The request was answered; HTTP lets a server ignore Upgrade (curl --http2
            # sends one), so read on with a fresh parser from where the request ended.
            offset = exc.args[0] if exc.args else len(chunk)
            self._parser = httptools.HttpRequestParser(self)
            return None if self.last else chunk[offset:]
        if not isinstance(exc, httptools.HttpParserError):
            raise exc
        if isinstance(exc, httptools.HttpParserCallbackError):
            log.error("request handling failed", exc_info=exc)
        if not self.last:
            self._sink.refuse(MALFORMED)
        return None

    # -- httptools callbacks
    def on_message_begin(self) -> None:
        self.phase = HEAD
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
        self.phase = BODY
        self._recv_head = 0
        declared = self._declared
        if declared is not None:
            self._declared = None
            size = int(declared)  # (the parser has checked that it is a number)
            if size > MAX_BODY:  # before any 100 Continue, and without reading it
                self._sink.refuse(TOO_LARGE, size)
                return
        if self._expect_continue:
            self._expect_continue = False
            self._sink.send_continue()  # don't make PowerShell and curl wait

    def on_body(self, body: bytes) -> None:
        if self.last:
            return
        size = self._body_size + len(body)
        self._body_size = size
        if size > MAX_BODY:  # a chunked body announces no total: refused once past it
            self._sink.refuse(TOO_LARGE)
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
        if self.last:
            return
        self.phase = BETWEEN
        if self._deadline_phase:
            self._deadline_phase = -1  # the next request gets a deadline of its own
        try:
            url = httptools.parse_url(self._url)
        except httptools.HttpParserInvalidURLError:
            self._sink.refuse(MALFORMED)
            return
        parser = self._parser
        close = not parser.should_keep_alive()
        if close:
            self.last = True
        request = Request(
            method=parser.get_method().decode("latin-1"),
            path=url.path.decode("latin-1"),
            query=url.query or b"",
            headers=self._headers,
            client=self.client,
            local_port=self.local_port,
            body=b"".join(self._body),
        )
        self._sink.request(request, close)

    # -- deadlines
    def restart_deadline(self) -> None:
        """Reading resumes: the client could not send while we did not read."""
        if self._deadline_phase > 0:
            self.deadline = self._shared.loop.time() + self._timeout(self._deadline_phase)

    def expire_if_late(self, now: float) -> None:
        """408 and close when the request's deadline passed (the connection was reading)."""
        if now < self.deadline:
            return
        if self.phase == BETWEEN:
            self._track(b"")  # no request under way after all: nothing is late
        else:
            self._sink.refuse(TIMED_OUT)

    def _timeout(self, phase: int) -> float:
        shared = self._shared
        return shared.header_timeout if phase == HEAD else shared.body_timeout

    def _track(self, read: bytes | memoryview) -> None:
        """Start, move or drop the deadline when the phase of the request changed; read
        the size of a chunk left open by ``read`` (the bytes just parsed)."""
        if self._deadline_phase == _CHUNK_OPEN:
            self._deadline_phase = self._phase_under_chunk
            if self._check_chunk(read) or self.phase == self._deadline_phase:
                return
        phase = self._deadline_phase = self.phase
        if phase == BETWEEN:
            self.deadline = 0.0
            self._shared.deadlines.discard(self._sink)
        else:
            self.deadline = self._shared.loop.time() + self._timeout(phase)
            self._shared.deadlines.add(self._sink)

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
        size = int(digits or b"0", 16)
        if self._chunk_start + size <= MAX_BODY:
            return False
        self._sink.refuse(TOO_LARGE, size - (self._body_size - self._chunk_start))
        return True
