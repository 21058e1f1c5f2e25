"""The metadata endpoint as a lean raw-ASGI app (CONTRACT section 1 and 3).

The hot path (GET of a cached document) does a handful of dict look-ups and one send;
everything it returns is pre-encoded bytes. It reads the fabric, and writes only
approvals. It never exposes control operations.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus

import msgspec

from ..contract import (
    BAD_VERSION,
    FORWARDED_NOT_ALLOWED,
    METADATA_HEADER_MISSING,
    METHOD_NOT_ALLOWED,
    MISSING_VERSION,
    NOT_FOUND,
    TOO_MANY_REQUESTS,
    ApiVersion,
    StartRequestError,
    error_body,
    lookup_version,
    parse_start_requests,
    version_error_body,
)
from ..fabric import VM, EventNotVisible, Fabric, monotonic
from .cache import DocumentCache
from .identity import VmResolver
from .instance import INSTANCE_VERSIONS, instance_document
from .ratelimit import RateLimiter

__all__ = ["ImdsApp", "ImdsSettings"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

JSON = b"application/json; charset=utf-8"
TEXT = b"text/plain; charset=utf-8"
MAX_BODY = 64 * 1024

SCHEDULED_EVENTS = "/metadata/scheduledevents"
INSTANCE = "/metadata/instance"
VERSIONS = "/metadata/versions"


@dataclass(frozen=True, slots=True)
class ImdsSettings:
    """Endpoint behaviour; defaults are the faithful ones except the first-call delay."""

    rate_limit: float | None = 5.0
    first_call_delay: float = 0.0


class _Reply(Exception):
    """An early answer (an error) from deep inside request handling."""

    def __init__(
        self, status: int, body: bytes, headers: tuple[tuple[bytes, bytes], ...] = ()
    ) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = headers


_ERR_MISSING_VERSION = (400, version_error_body(MISSING_VERSION))
_ERR_BAD_VERSION = (400, version_error_body(BAD_VERSION))
_ERR_HEADER = (400, error_body(METADATA_HEADER_MISSING))
_ERR_XFF = (400, error_body(FORWARDED_NOT_ALLOWED))
_ERR_RATE = (429, error_body(TOO_MANY_REQUESTS))
_ERR_NOT_FOUND = (404, error_body(NOT_FOUND))
_ERR_METHOD = (405, error_body(METHOD_NOT_ALLOWED), ((b"allow", b"GET, POST"),))
_ERR_METHOD_GET = (405, error_body(METHOD_NOT_ALLOWED), ((b"allow", b"GET"),))
_ERR_TOO_LARGE = (413, error_body("Request body too large"))


def _normalise_path(raw: str) -> str:
    """Lower-case path without trailing slash; absolute-form targets lose scheme and host."""
    if raw[:1] != "/":
        scheme_end = raw.find("://")
        if scheme_end != -1:
            slash = raw.find("/", scheme_end + 3)
            raw = raw[slash:] if slash != -1 else "/"
    path = raw.lower()
    if len(path) > 1 and path.endswith("/"):
        path = path.rstrip("/")
    return path


def _query(query_string: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    if not query_string:
        return out
    for part in query_string.decode("latin-1").split("&"):
        key, _, value = part.partition("=")
        if "%" in part or "+" in part:
            key, value = unquote_plus(key), unquote_plus(value)
        out.setdefault(key.lower(), value)
    return out


def _etag_matches(header: bytes, incarnation: int) -> bool:
    wanted = str(incarnation)
    for candidate in header.decode("latin-1").split(","):
        tag = candidate.strip()
        if tag.startswith(("W/", "w/")):
            tag = tag[2:]
        if tag.strip('"') == wanted:
            return True
    return False


class ImdsApp:
    """ASGI app of the metadata endpoint."""

    def __init__(
        self,
        fabric: Fabric,
        settings: ImdsSettings | None = None,
        *,
        on_response: Callable[[str, int], None] | None = None,
    ) -> None:
        self.fabric = fabric
        self.settings = settings or ImdsSettings()
        self._resolver = VmResolver(fabric.topology)
        self._cache = DocumentCache()
        rate = self.settings.rate_limit
        self._limiter = RateLimiter(rate, monotonic) if rate else None
        self._on_response = on_response

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await _lifespan(receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = _normalise_path(scope["path"])
        try:
            status, body, headers, content_type = await self._handle(path, scope, receive)
        except _Reply as reply:
            status, body, headers, content_type = reply.status, reply.body, reply.headers, JSON
        response_headers = [(b"content-type", content_type), *headers]
        if status != 304:
            response_headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": response_headers})
        await send({"type": "http.response.body", "body": b"" if status == 304 else body})
        if self._on_response is not None:
            self._on_response(path, status)

    async def _handle(
        self, path: str, scope: Scope, receive: Receive
    ) -> tuple[int, bytes, tuple[tuple[bytes, bytes], ...], bytes]:
        if path == SCHEDULED_EVENTS:
            route = SCHEDULED_EVENTS
        elif path == VERSIONS:
            route = VERSIONS
        elif path == INSTANCE or path.startswith(INSTANCE + "/"):
            route = INSTANCE
        else:
            raise _Reply(*_ERR_NOT_FOUND)
        client = scope.get("client")
        server = scope.get("server")
        vm = self._resolver.resolve(client[0] if client else None, server[1] if server else None)
        if vm is None or self.fabric.is_deleted(vm.name):
            raise _Reply(*_ERR_NOT_FOUND)
        if self._limiter is not None and not self._limiter.allow(vm.name):
            raise _Reply(*_ERR_RATE)
        method = scope["method"]
        if route == SCHEDULED_EVENTS:
            if method not in ("GET", "POST"):
                raise _Reply(*_ERR_METHOD)
        elif method != "GET":
            raise _Reply(*_ERR_METHOD_GET)
        metadata_ok = False
        if_none_match = None
        for name, value in scope["headers"]:
            if name == b"metadata":
                metadata_ok = value.strip().lower() == b"true"
            elif name == b"x-forwarded-for":
                raise _Reply(*_ERR_XFF)
            elif name == b"if-none-match":
                if_none_match = value
        query = _query(scope["query_string"])
        if route == VERSIONS:
            if not metadata_ok:
                raise _Reply(*_ERR_HEADER)
            body = msgspec.json.encode({"apiVersions": list(INSTANCE_VERSIONS)})
            return 200, body, (), JSON
        version_name = query.get("api-version")
        if route == INSTANCE:
            if not metadata_ok:
                raise _Reply(*_ERR_HEADER)
            return self._instance(path, vm, version_name, query)
        version = self._version(version_name)
        if not metadata_ok and not (method == "POST" and not version.post_needs_metadata_header):
            raise _Reply(*_ERR_HEADER)
        if self.fabric.note_request(vm) and self.settings.first_call_delay > 0:
            await asyncio.sleep(self.settings.first_call_delay)
        if method == "POST":
            await self._approve(vm, receive)
            return 200, b"", (), JSON
        view = self.fabric.view(vm.scope_id)
        etag = ((b"etag", b'"%d"' % view.incarnation),)
        if if_none_match is not None and _etag_matches(if_none_match, view.incarnation):
            return 304, b"", etag, JSON
        return 200, self._cache.document(view, vm, version), etag, JSON

    @staticmethod
    def _version(name: str | None) -> ApiVersion:
        if name is None:
            raise _Reply(*_ERR_MISSING_VERSION)
        version = lookup_version(name)
        if version is None:
            raise _Reply(*(_ERR_MISSING_VERSION if name == "" else _ERR_BAD_VERSION))
        return version

    async def _approve(self, vm: VM, receive: Receive) -> None:
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY:
                raise _Reply(*_ERR_TOO_LARGE)
            chunks.append(chunk)
            more = message.get("more_body", False)
        try:
            ids = parse_start_requests(b"".join(chunks))
            self.fabric.approve(vm, ids)
        except (StartRequestError, EventNotVisible) as exc:
            raise _Reply(400, error_body(str(exc))) from None

    @staticmethod
    def _instance(
        path: str, vm: VM, version_name: str | None, query: dict[str, str]
    ) -> tuple[int, bytes, tuple[tuple[bytes, bytes], ...], bytes]:
        if version_name is None:
            raise _Reply(*_ERR_MISSING_VERSION)
        if version_name not in INSTANCE_VERSIONS:
            raise _Reply(*_ERR_BAD_VERSION)
        node: Any = instance_document(vm)
        for part in path[len(INSTANCE) :].strip("/").split("/"):
            if not part:
                continue
            if isinstance(node, dict):
                match = next((k for k in node if k.lower() == part), None)
                if match is None:
                    raise _Reply(*_ERR_NOT_FOUND)
                node = node[match]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise _Reply(*_ERR_NOT_FOUND)
        if query.get("format", "json").lower() == "text":
            if isinstance(node, dict | list):
                raise _Reply(400, error_body("Bad request. Format text is only for leaf nodes"))
            return 200, str(node).encode(), (), TEXT
        return 200, msgspec.json.encode(node), (), JSON


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
