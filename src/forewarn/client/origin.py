"""An ``http://`` endpoint's host, port and authority, as both lean clients (the blocking
``syncwire`` and the async ``wire``) parse it: standard library only, no I/O."""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["http_origin"]


def http_origin(base: str) -> tuple[str, int, str]:
    """(host, port, authority) of ``base``; ValueError for anything but ``http://``."""
    parts = urlsplit(base)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"the lean client speaks http:// only, not {base!r}")
    return parts.hostname, parts.port or 80, parts.netloc
