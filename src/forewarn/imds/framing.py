"""Bytes on the wire for the endpoint's HTTP/1.1 protocol: status lines, Date, framing.

Kept apart from the connection logic so that the hot path (a cached Reply framed once and
reused request after request) is easy to read and to measure on its own.
"""

from __future__ import annotations

from email.utils import formatdate
from http import HTTPStatus

from forewarn.contract import error_body
from forewarn.fabric import wall_time
from forewarn.imds.messages import Reply

__all__ = [
    "CONTINUE",
    "HEAD_TOO_LARGE",
    "MALFORMED",
    "TIMED_OUT",
    "DateHeader",
    "Encoder",
]

ENCODER_CACHE_BYTES = 16 * 1024 * 1024

_STATUS_LINES = {s.value: f"HTTP/1.1 {s.value} {s.phrase}\r\n".encode() for s in HTTPStatus}

CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
MALFORMED = Reply(400, error_body("Malformed request"))
HEAD_TOO_LARGE = Reply(431, error_body("Request header fields too large"))
TIMED_OUT = Reply(408, error_body("Request not received in time"))


class DateHeader:
    """``date: ...\\r\\n``, formatted once per second."""

    __slots__ = ("_line", "second")

    def __init__(self) -> None:
        self.second = 0
        self._line = b""
        self.line()

    def line(self) -> bytes:
        now = int(wall_time())
        if now != self.second:
            self.second = now
            self._line = b"date: " + formatdate(now, usegmt=True).encode() + b"\r\n"
        return self._line


class _Framed:
    """One reply's framing: what follows the Date line, and the whole answer of the second
    it was last asked for (changed in place: no new object per second but its bytes)."""

    __slots__ = ("date", "reply", "rest", "whole")

    def __init__(self, reply: Reply, rest: bytes) -> None:
        self.reply = reply
        self.rest = rest
        self.date = b""
        self.whole = b""


class Encoder:
    """Status line + date + the rest, where the rest is cached per Reply object, and the
    whole answer per Reply object for the current second.

    Cached documents and error replies are the same Reply objects request after request,
    so the framing is built once, and the answer once a second: every VM of a scope that
    polls within a second is sent the same bytes object (at 10,000 VMs polling once a
    second each poll comes in another second than its VM's last one, so an answer kept
    per connection would be built again at every poll). Entries hold their Reply, so an
    id is never reused while its entry lives; the cache is bounded in bytes.
    """

    __slots__ = ("_bytes", "_closing", "_date", "_open")

    def __init__(self, date: DateHeader) -> None:
        self._date = date
        self._bytes = 0
        # By ``id(reply)``, one table per ``close`` (no key tuple to make per request).
        self._open: dict[int, _Framed] = {}
        self._closing: dict[int, _Framed] = {}

    def encode(self, reply: Reply, close: bool) -> bytes:
        date = self._date.line()
        entries = self._closing if close else self._open
        entry = entries.get(id(reply))
        if entry is None or entry.reply is not reply:
            entry = self._frame(reply, close)
        if entry.date is not date:
            entry.whole = _STATUS_LINES[reply.status] + date + entry.rest
            entry.date = date
        return entry.whole

    def _frame(self, reply: Reply, close: bool) -> _Framed:
        """A reply's first framing (counted twice against the bound: its rest and its
        whole answer)."""
        rest = _rest(reply, close)
        size = 2 * len(rest)
        if self._bytes + size > ENCODER_CACHE_BYTES or len(self._open) + len(self._closing) >= 4096:
            self._open.clear()
            self._closing.clear()
            self._bytes = 0
        entry = (self._closing if close else self._open)[id(reply)] = _Framed(reply, rest)
        self._bytes += size
        return entry


def _rest(reply: Reply, close: bool) -> bytes:
    parts = [b"content-type: ", reply.content_type, b"\r\n"]
    for name, value in reply.headers:
        parts += (name, b": ", value, b"\r\n")
    if reply.status != 304:
        parts.append(b"content-length: %d\r\n" % len(reply.body))
    if close:
        parts.append(b"connection: close\r\n")
    parts.append(b"\r\n")
    if reply.status != 304:
        parts.append(reply.body)
    return b"".join(parts)
