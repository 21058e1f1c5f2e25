"""The metadata endpoint as an ASGI app, for in-process use (tests, embedding).

``forewarn serve`` runs the faster HTTP/1.1 protocol of ``protocol.py``; both hand every
request to the same ``Endpoint``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from forewarn.fabric import Fabric
from forewarn.imds.deferred import resolve
from forewarn.imds.endpoint import MAX_BODY, TOO_LARGE, Endpoint, ImdsSettings
from forewarn.imds.messages import Request
from forewarn.imds.segments import raw_path
from forewarn.rehearsal import ReactionTracker

__all__ = ["ImdsApp"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class ImdsApp:
    """ASGI adapter over an ``Endpoint``."""

    def __init__(
        self,
        fabric: Fabric,
        settings: ImdsSettings | None = None,
        *,
        on_response: Callable[[str, int], None] | None = None,
        reactions: ReactionTracker | None = None,
    ) -> None:
        self.endpoint = Endpoint(fabric, settings, on_response=on_response, reactions=reactions)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "lifespan":
            await _lifespan(receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await _read_body(receive)
        if body is None:
            reply = TOO_LARGE
        else:
            client = scope.get("client")
            server = scope.get("server")
            request = Request(
                method=scope["method"],
                # the path as sent: ``Endpoint`` decodes it segment by segment
                path=raw_path(scope),
                query=scope["query_string"],
                headers=scope["headers"],
                client=client[0] if client else None,
                local_port=server[1] if server else None,
                body=body,
            )
            reply = await resolve(self.endpoint.handle(request))  # ``wait`` resolved
        if reply.status < 0:  # an injected fault: ASGI cannot drop the connection itself
            raise ConnectionResetError("injected endpoint fault: no answer")
        if reply.delay > 0:
            await asyncio.sleep(reply.delay)
        headers = [(b"content-type", reply.content_type), *reply.headers]
        if reply.status != 304:
            headers.append((b"content-length", b"%d" % len(reply.body)))
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        await send({"type": "http.response.body", "body": reply.body})


async def _read_body(receive: Receive) -> bytes | None:
    """The whole request body, or None when it exceeds ``MAX_BODY``."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
