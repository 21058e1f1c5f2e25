"""The Scheduled Events wire contract, pure and shared by emulator and client.

No I/O, no clock, no HTTP framework: api-versions, the one event, document and instance
model (the client hands it to its users), RFC 1123 dates, per-version rendering, tolerant
parsing and error bodies.
"""

from typing import TYPE_CHECKING

from forewarn.contract.lazynames import lazy_getattr

if TYPE_CHECKING:
    from forewarn.contract.errors import (
        BAD_VERSION,
        FORWARDED_NOT_ALLOWED,
        METADATA_HEADER_MISSING,
        METHOD_NOT_ALLOWED,
        MISSING_VERSION,
        NOT_FOUND,
        TOO_MANY_REQUESTS,
        error_body,
        version_error_body,
    )
    from forewarn.contract.model import (
        EVENT_KEYS,
        RESOURCE_TYPE,
        Document,
        Event,
        EventSource,
        EventStatus,
        Instance,
        ResourceType,
        resource_matches,
    )
    from forewarn.contract.parse import DocumentFormatError, parse_document, parse_instance
    from forewarn.contract.render import RenderableEvent, render_document
    from forewarn.contract.startrequests import StartRequestError, parse_start_requests
    from forewarn.contract.timefmt import format_rfc1123, parse_not_before
    from forewarn.contract.versions import (
        NEWEST_VERSIONS,
        SUPPORTED_VERSIONS,
        ApiVersion,
        EventType,
        lookup_version,
    )

#: Where each name lives: a module is imported when one of its names is first asked for,
#: so ``forewarn --version`` (which needs only ``addresses``) does not load json and
#: the date parsing, a third of its start-up. The imports above (for type checkers), this
#: map and ``__all__`` name the same: tests/vmside/test_lazy_names.py holds them equal.
_LAZY = {
    "BAD_VERSION": "errors",
    "FORWARDED_NOT_ALLOWED": "errors",
    "METADATA_HEADER_MISSING": "errors",
    "METHOD_NOT_ALLOWED": "errors",
    "MISSING_VERSION": "errors",
    "NOT_FOUND": "errors",
    "TOO_MANY_REQUESTS": "errors",
    "error_body": "errors",
    "version_error_body": "errors",
    "EVENT_KEYS": "model",
    "RESOURCE_TYPE": "model",
    "Document": "model",
    "Event": "model",
    "EventSource": "model",
    "EventStatus": "model",
    "Instance": "model",
    "ResourceType": "model",
    "resource_matches": "model",
    "DocumentFormatError": "parse",
    "parse_document": "parse",
    "parse_instance": "parse",
    "RenderableEvent": "render",
    "render_document": "render",
    "StartRequestError": "startrequests",
    "parse_start_requests": "startrequests",
    "format_rfc1123": "timefmt",
    "parse_not_before": "timefmt",
    "NEWEST_VERSIONS": "versions",
    "SUPPORTED_VERSIONS": "versions",
    "ApiVersion": "versions",
    "EventType": "versions",
    "lookup_version": "versions",
}


__getattr__ = lazy_getattr(__name__, _LAZY, "forewarn.contract.")


__all__ = [
    "BAD_VERSION",
    "EVENT_KEYS",
    "FORWARDED_NOT_ALLOWED",
    "METADATA_HEADER_MISSING",
    "METHOD_NOT_ALLOWED",
    "MISSING_VERSION",
    "NEWEST_VERSIONS",
    "NOT_FOUND",
    "RESOURCE_TYPE",
    "SUPPORTED_VERSIONS",
    "TOO_MANY_REQUESTS",
    "ApiVersion",
    "Document",
    "DocumentFormatError",
    "Event",
    "EventSource",
    "EventStatus",
    "EventType",
    "Instance",
    "RenderableEvent",
    "ResourceType",
    "StartRequestError",
    "error_body",
    "format_rfc1123",
    "lookup_version",
    "parse_document",
    "parse_instance",
    "parse_not_before",
    "parse_start_requests",
    "render_document",
    "resource_matches",
    "version_error_body",
]
