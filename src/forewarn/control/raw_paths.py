"""The control API routes on the path as sent, segment by segment.

Starlette routes on the decoded path, where an encoded ``/`` is a separator: an event id
``x%2fapprove`` would be the approval route of event ``x``. A path with a segment that
decodes to what no id or name can hold (``imds/segments.py``) is answered 404 here,
before any route, so what is left routes as its raw segments would.
"""

from __future__ import annotations

import msgspec
from starlette.types import ASGIApp, Receive, Scope, Send

from forewarn.control.json_views import shorten
from forewarn.imds.segments import decoded_path, raw_path

__all__ = ["RawPaths"]


class RawPaths:
    """ASGI middleware: 404 for a path with a segment that decodes to no name."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = raw_path(scope)
        if decoded_path(raw) is not None:
            await self.app(scope, receive, send)
            return
        message = (
            f"no such route: {raw} (a path segment decodes to '/', '\\', a control character, "
            "invalid UTF-8, '.' or '..', which no id or name holds)"
        )
        body = msgspec.json.encode({"error": shorten(message)})
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(body)),
        ]
        await send({"type": "http.response.start", "status": 404, "headers": headers})
        head = scope["method"] == "HEAD"
        await send({"type": "http.response.body", "body": b"" if head else body})
