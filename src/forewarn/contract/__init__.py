"""The Scheduled Events wire contract, pure and shared by emulator and client.

No I/O, no clock, no HTTP framework: api-versions, the one event, document and instance
model (the client hands it to its users), RFC 1123 dates, per-version rendering, tolerant
parsing and error bodies.
"""

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
from forewarn.contract.parse import (
    DocumentFormatError,
    StartRequestError,
    parse_document,
    parse_instance,
    parse_start_requests,
)
from forewarn.contract.render import RenderableEvent, render_document
from forewarn.contract.timefmt import format_rfc1123, parse_not_before
from forewarn.contract.versions import (
    NEWEST_VERSIONS,
    SUPPORTED_VERSIONS,
    ApiVersion,
    EventType,
    lookup_version,
)

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
