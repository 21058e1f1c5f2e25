"""The blocking twin's transport: the client's HTTP/1.1 (``http1``) on a socket.

One kept-alive connection, as ``wire`` keeps for the async twin: one the server closed
while idle is replaced before a request is written on it (so an approval is never lost
to a keep-alive time-out), and a GET that finds it closed anyway (the server closed it
as the request went out) is sent once more on a new one. An https:// endpoint's socket
is wrapped by the standard library's ssl (imported then only).
"""

from __future__ import annotations

import socket
import time

from forewarn.client.core import Answer, RequestSpec, Settings
from forewarn.client.http1 import ProtocolError, Response, request_bytes
from forewarn.client.origin import http_origin
from forewarn.client.transport import failure

__all__ = ["SyncWire"]

#: Bytes read from the socket at a time.
READ_SIZE = 256 * 1024


class SyncWire:
    """Requests to one endpoint on one kept-alive connection."""

    def __init__(self, base: str, local_address: str | None = None) -> None:
        self.host, self.port, self.authority, self.tls = http_origin(base)
        #: What ``getaddrinfo`` is asked: an ASCII name as bytes, which it takes as it is,
        #: where a str is first encoded with the "idna" codec (loading it costs a command
        #: more than its requests; bytes also make a bad label an OSError like any other).
        self._lookup: str | bytes = self.host.encode() if self.host.isascii() else self.host
        self.local_address = local_address
        self._socket: socket.socket | None = None

    def send(self, spec: RequestSpec, settings: Settings) -> Answer:
        """Send ``spec``; the answer (``transport``'s rules when none came)."""
        payload, url = request_bytes(spec, self.authority)
        try:
            response = self._exchange(payload, spec, settings)
        except (OSError, ProtocolError) as exc:
            self.close()
            raise failure(url, exc) from None
        return Answer(response.status, response.headers, bytes(response.body), url)

    def _exchange(self, payload: bytes, spec: RequestSpec, settings: Settings) -> Response:
        if self._socket is not None and not self.tls and _closed_by_peer(self._socket):
            self.close()  # the server's keep-alive time-out: nothing was sent on it
        reused = self._socket is not None
        response = self._once(payload, spec, settings)
        if response is None and reused and spec.method == "GET":
            self.close()  # the server closed the kept-alive connection meanwhile
            response = self._once(payload, spec, settings)
        if response is None:
            raise ProtocolError("the server closed the connection before answering")
        if not response.keep_alive:
            self.close()
        return response

    def _once(self, payload: bytes, spec: RequestSpec, settings: Settings) -> Response | None:
        """The response, or None when the connection closed before its first byte."""
        if self._socket is None:
            source = (self.local_address, 0) if self.local_address else None
            self._socket = socket.create_connection(
                (self._lookup, self.port),  # type: ignore[arg-type]  # bytes work: getaddrinfo's
                timeout=settings.timeout,
                source_address=source,
            )
            if self.tls:
                import ssl

                context = ssl.create_default_context()
                self._socket = context.wrap_socket(self._socket, server_hostname=self.host)
        connection = self._socket
        # the whole answer within the time-out (as the async twin), not each byte of it
        deadline = time.monotonic() + settings.read_timeout()
        connection.settimeout(settings.read_timeout())
        response = Response(head_only=spec.method == "HEAD")
        try:
            connection.sendall(payload)
            while not response.done:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                connection.settimeout(left)
                data = connection.recv(READ_SIZE)
                if not data:
                    if not response.started:
                        return None
                    response.eof()  # complete if the body runs to the close, else raises
                    break
                response.feed(data)
        except (ConnectionResetError, BrokenPipeError):
            if response.started:
                raise
            return None
        return response

    def close(self) -> None:
        """Drop the connection (the next request opens another)."""
        if self._socket is not None:
            self._socket.close()
            self._socket = None


def _closed_by_peer(connection: socket.socket) -> bool:
    """Whether an idle kept-alive connection was ended by the server (or holds bytes no
    request asked for): either way not to be written on. A peek that does not wait (no
    ``select``: its descriptors stop at 1024)."""
    connection.setblocking(False)
    try:
        connection.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        return False  # nothing to read: still open
    except OSError:
        return True  # reset
    return True  # its end (b"") or stray bytes
