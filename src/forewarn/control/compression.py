"""gzip for the control API's large answers, for clients that ask for it.

Starlette's ``GZipMiddleware``, with what the API needs of it: the level (5: an 8.8 MB
verdict of 10,000 VMs in some 30 ms to 240 KB, where 9 takes 100 ms for 207 KB); bodies
of ``THREAD_BYTES`` or more compressed on a worker thread, never on the event loop that
answers the VMs; ``Accept-Encoding`` read as a list with q values (``gzip;q=0`` refuses
it, ``*`` accepts it). Answers under ``MINIMUM_BYTES``, 304s and anything already
encoded go as they are; so does the dashboard's stream (``text/event-stream``): its head
passes at once, and its messages never go through the middleware at all (``wire.py``
writes them to the connection). A client that sends no ``Accept-Encoding`` gets every
answer exactly as before.
"""

from __future__ import annotations

from starlette.middleware.gzip import GZipResponder
from starlette.types import ASGIApp, Receive, Scope, Send

from forewarn.control.qvalues import weighted

__all__ = ["LEVEL", "MINIMUM_BYTES", "THREAD_BYTES", "Compression", "accepts_gzip"]

LEVEL = 5
#: Smaller answers are not worth the header and the CPU.
MINIMUM_BYTES = 1024
#: Bodies this big are compressed on a worker thread (64 KB: about 0.3 ms at level 5).
THREAD_BYTES = 64 * 1024


def accepts_gzip(header: str) -> bool:
    """Whether an ``Accept-Encoding`` value accepts gzip (RFC 9110 section 12.5.3)."""
    given = weighted(header)
    q = given.get("gzip", given.get("x-gzip", given.get("*", 0.0)))
    return q > 0


class Compression:
    """ASGI middleware: gzip when the request accepts it (see the module)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") != "HEAD":
            given = [v for k, v in scope.get("headers", ()) if k.lower() == b"accept-encoding"]
            if given and accepts_gzip(b", ".join(given).decode("latin-1")):
                responder = GZipResponder(  # its text/event-stream passes untouched
                    self.app, MINIMUM_BYTES, LEVEL, thread_minimum_size=THREAD_BYTES
                )
                await responder(scope, receive, send)
                return
        await self.app(scope, receive, send)
