"""Error bodies of the metadata endpoint, exactly as clients see them."""

from __future__ import annotations

import json

from forewarn.contract.versions import NEWEST_VERSIONS

__all__ = [
    "BAD_VERSION",
    "FORWARDED_NOT_ALLOWED",
    "METADATA_HEADER_MISSING",
    "METHOD_NOT_ALLOWED",
    "MISSING_VERSION",
    "NOT_FOUND",
    "TOO_MANY_REQUESTS",
    "error_body",
    "version_error_body",
]

MISSING_VERSION = (
    "Bad request. api-version was not specified in the request. "
    "For more information refer to aka.ms/azureimds"
)
BAD_VERSION = (
    "Bad request. api-version is invalid or was not specified in the request. "
    "For more information refer to aka.ms/azureimds"
)
METADATA_HEADER_MISSING = "Bad request. Required metadata header not specified"
FORWARDED_NOT_ALLOWED = "Bad request. X-Forwarded-For header is not allowed"
TOO_MANY_REQUESTS = "Too many requests"
METHOD_NOT_ALLOWED = "Method not allowed"
NOT_FOUND = "Not found"


def error_body(message: str) -> bytes:
    """``{"error": message}`` as compact JSON."""
    return json.dumps({"error": message}, ensure_ascii=False, separators=(",", ":")).encode()


def version_error_body(message: str, newest: tuple[str, ...] = NEWEST_VERSIONS) -> bytes:
    """An api-version error, which also suggests the newest versions (of this path)."""
    body = {"error": message, "newest-versions": list(newest)}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
