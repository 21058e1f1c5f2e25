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


class Encoder:
    """Status line + date + the rest, where the rest is cached per Reply object.

    Cached documents and error replies are the same Reply objects request after request,
    so the framing is built once. Entries hold their Reply, so an id is never reused while
    its entry lives; the cache is bounded in bytes.
    """

    __slots__ = ("_bytes", "_date", "_rest")

    def __init__(self, date: DateHeader) -> None:
        self._date = date
        self._bytes = 0
        self._rest: dict[tuple[int, bool], tuple[Reply, bytes]] = {}

    def encode(self, reply: Reply, close: bool) -> bytes:
        key = (id(reply), close)
        entry = self._rest.get(key)
        if entry is None or entry[0] is not reply:
            rest = _rest(reply, close)
            if self._bytes + len(rest) > ENCODER_CACHE_BYTES or len(self._rest) >= 4096:
                self._rest.clear()
                self._bytes = 0
            self._rest[key] = (reply, rest)
            self._bytes += len(rest)
        else:
            rest = entry[1]
        return _STATUS_LINES[reply.status] + self._date.line() + rest


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
