"""A bound on control-API request bodies, enforced before they are read.

Every body the API takes is a small JSON object; a client that sends 100 MB would
otherwise have the server hold all of it (and the endpoint's VMs would pay in latency).
A declared ``Content-Length`` over ``MAX_BODY`` is refused with 413 before a byte of the
body is read; a chunked body (no length given) is counted as it arrives and refused as
soon as it passes the bound. Either way the connection is closed after the answer.
"""

from __future__ import annotations

import msgspec
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["MAX_BODY", "BodyLimit", "BodyTooLarge"]

#: Bytes of a request body (an operation naming 20,000 VMs fits).
MAX_BODY = 1024 * 1024


class BodyTooLarge(HTTPException):
    """A body past ``MAX_BODY`` (raised from ``receive``; answered 413)."""

    def __init__(self) -> None:
        super().__init__(413, f"request body too large: at most {MAX_BODY} bytes")


class BodyLimit:
    """ASGI middleware: 413 for a body over ``limit`` bytes, declared or streamed."""

    def __init__(self, app: ASGIApp, *, limit: int = MAX_BODY) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.limit:
            await _refuse(send, scope)
            return
        started = refused = False
        seen = 0

        async def counted() -> Message:
            nonlocal seen, refused
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    refused = True
                    raise BodyTooLarge()
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if refused:  # the rest of the body is not read: the connection ends
                    headers = [*message.get("headers", ()), (b"connection", b"close")]
                    message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except BodyTooLarge:  # raised where no handler turned it into an answer
            if started:
                raise
            await _refuse(send, scope)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _refuse(send: Send, scope: Scope) -> None:
    body = msgspec.json.encode({"error": BodyTooLarge().detail})
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})
