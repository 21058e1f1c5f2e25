"""A typed client of Azure's Scheduled Events endpoint, for real VMs and for forewarn.

Sync and async twins (``ScheduledEventsClient``, ``AsyncScheduledEventsClient``) carry out
what one I/O-free core decides (requests, answers, retries, change diffing). The documents
they hand back are the contract's one wire model (``Document``, ``Event``…, re-exported
here). This package imports nothing of the emulator: it ships to real VMs.

Exceptions (each carries ``status``, ``body`` and ``url``):

    ClientError
    ├── InvalidEndpoint          a URL or variable that is not an http:// endpoint (ValueError)
    ├── EndpointUnreachable      no HTTP answer: refused, reset (after the retries)
    │   └── EndpointTimeout      connected, but no answer in time
    ├── DocumentError            200, but the body is not a document / instance metadata
    └── EndpointError            an error status; ``.error`` is the endpoint's message
        ├── BadRequestError      400: api-version, Metadata header, a rejected approval
        ├── NotFoundError        404
        ├── GoneError            410 still, after ``retry_gone_for`` seconds of retries
        ├── RateLimitedError     429 still, after the retries
        └── ServerError          5xx still, after the retries
"""

from typing import TYPE_CHECKING

from forewarn.client.changes import DocumentChange, diff_documents
from forewarn.client.core import (
    DEFAULT_API_VERSION,
    INSTANCE_API_VERSION,
    ClientOptions,
    RetryPolicy,
)
from forewarn.client.endpoint import (
    DEFAULT_ENDPOINT,
    Discovery,
    discover,
    option_245,
    resolve_endpoint,
)
from forewarn.client.errors import (
    BadRequestError,
    ClientError,
    DocumentError,
    EndpointError,
    EndpointTimeout,
    EndpointUnreachable,
    GoneError,
    InvalidEndpoint,
    NotFoundError,
    RateLimitedError,
    ServerError,
)
from forewarn.client.recording import DocumentRecorder
from forewarn.contract import (
    Document,
    Event,
    EventSource,
    EventStatus,
    EventType,
    Instance,
    ResourceType,
    parse_document,
    parse_instance,
)

if TYPE_CHECKING:
    from forewarn.client.aio import AsyncScheduledEventsClient
    from forewarn.client.sync import ScheduledEventsClient


def __getattr__(name: str) -> object:
    # Each twin loads on first use: the VM commands are synchronous (no asyncio), the
    # agent asynchronous (no socket-blocking twin).
    if name == "AsyncScheduledEventsClient":
        from forewarn.client.aio import AsyncScheduledEventsClient

        return AsyncScheduledEventsClient
    if name == "ScheduledEventsClient":
        from forewarn.client.sync import ScheduledEventsClient

        return ScheduledEventsClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_API_VERSION",
    "DEFAULT_ENDPOINT",
    "INSTANCE_API_VERSION",
    "AsyncScheduledEventsClient",
    "BadRequestError",
    "ClientError",
    "ClientOptions",
    "Discovery",
    "Document",
    "DocumentChange",
    "DocumentError",
    "DocumentRecorder",
    "EndpointError",
    "EndpointTimeout",
    "EndpointUnreachable",
    "Event",
    "EventSource",
    "EventStatus",
    "EventType",
    "GoneError",
    "Instance",
    "InvalidEndpoint",
    "NotFoundError",
    "RateLimitedError",
    "ResourceType",
    "RetryPolicy",
    "ScheduledEventsClient",
    "ServerError",
    "diff_documents",
    "discover",
    "option_245",
    "parse_document",
    "parse_instance",
    "resolve_endpoint",
]
