"""The client's one HTTP/1.1, without I/O: a request's bytes, and a response parsed as
its bytes arrive. The async ``wire`` (asyncio) and the blocking ``syncwire`` (a socket)
feed it alike. The endpoint is plain HTTP on a link-local address (no proxy, no
redirects, no compression): one request written in one piece, a response read by
Content-Length, chunks or to the close, is all it takes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from forewarn.client.origin import USER_AGENT, request_target

if TYPE_CHECKING:
    from forewarn.client.core import RequestSpec

__all__ = ["MAX_BODY", "MAX_HEAD", "ProtocolError", "Response", "request_bytes"]

#: Bounds on what the endpoint may send: a document of 10,000 events is ~3 MB.
MAX_HEAD = 64 * 1024
MAX_BODY = 256 * 1024 * 1024


class ProtocolError(Exception):
    """The peer's bytes are not an HTTP/1.1 response (or the connection ended mid-way)."""


class Response:
    """One response, parsed as its bytes arrive (``feed``); ``done`` once complete."""

    def __init__(self, head_only: bool) -> None:
        self.head_only = head_only
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body = bytearray()
        self.keep_alive = True
        self.done = False
        self.started = False
        self._buffer = bytearray()
        self._length: int | None = None  # the body's length; None: to the close
        self._chunked = False
        self._in_head = True

    def feed(self, data: bytes) -> None:
        self.started = True
        self._buffer += data
        if self._in_head and not self._head():
            return
        if not self._in_head:
            self._body()

    def eof(self) -> None:
        """The peer closed: complete when the body runs to the close, else broken."""
        if not self._in_head and self._length is None and not self._chunked:
            self.body += self._buffer
            self._buffer.clear()
            self.keep_alive = False
            self.done = True
        if not self.done:
            raise ProtocolError("the server closed the connection before a whole answer")

    def _head(self) -> bool:
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buffer) > MAX_HEAD:
                raise ProtocolError("response head too long")
            return False
        lines = bytes(self._buffer[:end]).decode("latin-1").split("\r\n")
        del self._buffer[: end + 4]
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or not _digits(code):
            raise ProtocolError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
        self.status = int(code)
        if 100 <= self.status < 200:  # an interim answer: the real one follows
            return self._head()
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise ProtocolError(f"malformed header line: {line[:80]!r}")
            self.headers[name.strip().lower()] = value.strip()
        connection = self.headers.get("connection", "").lower()
        self.keep_alive = version == "HTTP/1.1" and "close" not in connection
        self._in_head = False
        if self.head_only or self.status in (204, 304):
            self._length = 0
        elif "chunked" in self.headers.get("transfer-encoding", "").lower():
            self._chunked = True
        elif "content-length" in self.headers:
            value = self.headers["content-length"]
            if not _digits(value) or int(value) > MAX_BODY:
                raise ProtocolError(f"bad Content-Length {value[:40]!r}")
            self._length = int(value)
        else:
            self.keep_alive = False
        return True

    def _body(self) -> None:
        if self._chunked:
            self._chunks()
        elif self._length is not None and len(self._buffer) >= self._length:
            self.body += self._buffer[: self._length]
            self._buffer.clear()
            self.done = True
        elif len(self._buffer) > MAX_BODY:
            raise ProtocolError("response body too long")

    def _chunks(self) -> None:
        while True:
            end = self._buffer.find(b"\r\n")
            if end < 0:
                return
            size_text = bytes(self._buffer[:end]).split(b";")[0].strip()
            if not size_text or size_text.strip(b"0123456789abcdefABCDEF"):
                raise ProtocolError(f"bad chunk size {size_text[:20]!r}")
            size = int(size_text, 16)
            if len(self.body) + size > MAX_BODY:
                raise ProtocolError("response body too long")
            if size == 0:  # the last chunk, then trailers up to an empty line
                trailer_end = self._buffer.find(b"\r\n\r\n", end)
                if trailer_end < 0:
                    return
                self._buffer.clear()
                self.done = True
                return
            if len(self._buffer) < end + 2 + size + 2:
                return
            self.body += self._buffer[end + 2 : end + 2 + size]
            del self._buffer[: end + 2 + size + 2]


def _digits(text: str) -> bool:
    """ASCII digits only (``str.isdigit`` also takes "²", which ``int`` refuses)."""
    return text.isascii() and text.isdigit()


def request_bytes(spec: RequestSpec, authority: str) -> tuple[bytes, str]:
    """``spec`` as the bytes of one HTTP/1.1 request (written in one piece), and the URL
    errors name."""
    target, url = request_target(spec, authority)
    lines = [f"{spec.method} {target} HTTP/1.1", f"Host: {authority}",
             "Accept: */*", f"User-Agent: {USER_AGENT}"]  # fmt: skip
    lines += [f"{name}: {value}" for name, value in spec.headers.items()]
    content = spec.content
    if content is not None or spec.method in ("POST", "PUT"):
        lines.append(f"Content-Length: {len(content or b'')}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + (content or b""), url
