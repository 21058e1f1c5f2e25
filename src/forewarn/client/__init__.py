"""A typed client of Azure's Scheduled Events endpoint, for real VMs and for forewarn.

Sync and async twins (``ScheduledEventsClient``, ``AsyncScheduledEventsClient``) carry out
what one I/O-free core decides (requests, answers, retries, change diffing). The documents
they hand back are the contract's one wire model (``Document``, ``Event``…, re-exported
here). They send through a ``Transport`` (the client's own HTTP/1.1; ``MockTransport`` in
tests). This package imports the standard library only: it ships to real VMs.

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

from forewarn.contract.lazynames import lazy_getattr

if TYPE_CHECKING:
    from forewarn.client.aio import AsyncScheduledEventsClient
    from forewarn.client.changes import DocumentChange, diff_documents
    from forewarn.client.core import (
        DEFAULT_API_VERSION,
        INSTANCE_API_VERSION,
        ClientOptions,
        RetryPolicy,
    )
    from forewarn.client.discovery import Discovery, discover, option_245
    from forewarn.client.endpoint import DEFAULT_ENDPOINT, resolve_endpoint
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
    from forewarn.client.sync import ScheduledEventsClient
    from forewarn.client.transport import AsyncTransport, MockTransport, Transport
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

#: Where each name lives: a module is imported when one of its names is first asked for.
#: A VM command loads only what it runs: the blocking twin and no asyncio, ``discover``
#: and no HTTP, the errors alone to name a failure, and ``forewarn.client.http1`` imports
#: nothing else of the package. The imports above (for type checkers), this map and
#: ``__all__`` name the same: tests/vmside/test_lazy_names.py holds them equal.
_LAZY = {
    "AsyncScheduledEventsClient": "forewarn.client.aio",
    "DocumentChange": "forewarn.client.changes",
    "diff_documents": "forewarn.client.changes",
    "DEFAULT_API_VERSION": "forewarn.client.core",
    "INSTANCE_API_VERSION": "forewarn.client.core",
    "ClientOptions": "forewarn.client.core",
    "RetryPolicy": "forewarn.client.core",
    "Discovery": "forewarn.client.discovery",
    "discover": "forewarn.client.discovery",
    "option_245": "forewarn.client.discovery",
    "DEFAULT_ENDPOINT": "forewarn.client.endpoint",
    "resolve_endpoint": "forewarn.client.endpoint",
    "BadRequestError": "forewarn.client.errors",
    "ClientError": "forewarn.client.errors",
    "DocumentError": "forewarn.client.errors",
    "EndpointError": "forewarn.client.errors",
    "EndpointTimeout": "forewarn.client.errors",
    "EndpointUnreachable": "forewarn.client.errors",
    "GoneError": "forewarn.client.errors",
    "InvalidEndpoint": "forewarn.client.errors",
    "NotFoundError": "forewarn.client.errors",
    "RateLimitedError": "forewarn.client.errors",
    "ServerError": "forewarn.client.errors",
    "DocumentRecorder": "forewarn.client.recording",
    "ScheduledEventsClient": "forewarn.client.sync",
    "AsyncTransport": "forewarn.client.transport",
    "MockTransport": "forewarn.client.transport",
    "Transport": "forewarn.client.transport",
    "Document": "forewarn.contract",
    "Event": "forewarn.contract",
    "EventSource": "forewarn.contract",
    "EventStatus": "forewarn.contract",
    "EventType": "forewarn.contract",
    "Instance": "forewarn.contract",
    "ResourceType": "forewarn.contract",
    "parse_document": "forewarn.contract",
    "parse_instance": "forewarn.contract",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "DEFAULT_API_VERSION",
    "DEFAULT_ENDPOINT",
    "INSTANCE_API_VERSION",
    "AsyncScheduledEventsClient",
    "AsyncTransport",
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
    "MockTransport",
    "NotFoundError",
    "RateLimitedError",
    "ResourceType",
    "RetryPolicy",
    "ScheduledEventsClient",
    "ServerError",
    "Transport",
    "diff_documents",
    "discover",
    "option_245",
    "parse_document",
    "parse_instance",
    "resolve_endpoint",
]
