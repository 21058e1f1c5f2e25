"""The endpoint's request and reply, shared by its transports and its document cache."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["JSON", "TEXT", "Headers", "Reply", "Request"]

Headers = tuple[tuple[bytes, bytes], ...]

JSON = b"application/json; charset=utf-8"
TEXT = b"text/plain; charset=utf-8"


@dataclass(slots=True)
class Request:
    """One HTTP request as the endpoint needs it (header names lower-case)."""

    method: str
    path: str
    query: bytes
    headers: list[tuple[bytes, bytes]]
    client: str | None
    local_port: int | None
    body: bytes = b""


@dataclass(frozen=True, slots=True)
class Reply:
    """The answer: status, body, extra headers, content type, and a delay before sending."""

    status: int
    body: bytes
    headers: Headers = ()
    content_type: bytes = JSON
    delay: float = 0.0
