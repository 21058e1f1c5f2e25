"""The endpoint's request and reply, shared by its transports and its document cache."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from forewarn.contract import TOO_MANY_REQUESTS, error_body

__all__ = [
    "HANG_UP",
    "JSON",
    "RATE_LIMITED",
    "RESET",
    "TEXT",
    "Handler",
    "Headers",
    "Repeater",
    "Reply",
    "Request",
    "Ticket",
]

Headers = tuple[tuple[bytes, bytes], ...]

JSON = b"application/json; charset=utf-8"
TEXT = b"text/plain; charset=utf-8"

#: Statuses of replies that are no answer (injected faults, ``faults.py``): close the
#: connection unanswered, or reset it. They always come through ``Reply.wait``.
HANG_UP = -1
RESET = -2


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
    """The answer: status, body, extra headers, content type, and a delay before sending.

    ``wait``, when set, means the real answer is known only later (an approval is answered
    once it is durably written): the transports send what it resolves to instead, in
    request order, and nothing pipelined behind it is read or answered before that.
    """

    status: int
    body: bytes
    headers: Headers = ()
    content_type: bytes = JSON
    delay: float = 0.0
    wait: Awaitable[Reply] | None = field(default=None, compare=False, repr=False)


class Handler(Protocol):
    """What the transports serve: ``Endpoint`` (or a stand-in in tests)."""

    def handle(self, request: Request) -> Reply:
        """Answer one request; never raises for anything a client can send."""
        ...


class Ticket:
    """What an endpoint needs to answer a request again that a connection sends byte for
    byte once more (opaque to the transports)."""

    __slots__ = ()


@runtime_checkable
class Repeater(Protocol):
    """An endpoint that answers a repeated request without it being parsed again."""

    def ticket(self, request: Request) -> Ticket | None:
        """A ticket for answering ``request`` again (just answered), or None when the same
        bytes might need more than the ticket holds (then they are parsed every time)."""
        ...

    def again(self, ticket: Ticket) -> Reply | None:
        """The answer to the ticket's request sent again, every rule applied as for a
        parsed one (rate limit, faults, deleted VMs, documents); None: parse it instead."""
        ...


#: The answer to a VM over its rate limit (also what a co-tenant poller's fault causes).
RATE_LIMITED = Reply(429, error_body(TOO_MANY_REQUESTS))
