"""What both lean clients (the blocking ``syncwire``, the async ``wire``) do alike around
their own HTTP/1.1: parse an ``http://`` endpoint, write a request's target, and say what
a connection that failed means. Standard library only, no I/O."""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit

from forewarn.client.core import RequestSpec, Transient
from forewarn.client.errors import EndpointUnreachable

__all__ = ["USER_AGENT", "http_origin", "request_target", "unreachable"]

#: What identifies the client to the endpoint.
USER_AGENT = "forewarn-client"


def http_origin(base: str) -> tuple[str, int, str]:
    """(host, port, authority) of ``base``; ValueError for anything but ``http://``."""
    parts = urlsplit(base)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"the lean client speaks http:// only, not {base!r}")
    return parts.hostname, parts.port or 80, parts.netloc


def request_target(spec: RequestSpec, authority: str) -> tuple[str, str]:
    """The request line's target of ``spec`` (path and query), and the URL errors name."""
    target = urlsplit(spec.url).path or "/"
    if spec.params:
        target += "?" + urlencode(spec.params)
    return target, f"http://{authority}{target}"


def unreachable(url: str, exc: Exception) -> Transient:
    """A connection refused, reset or closed mid-answer, or bytes that are no HTTP: worth
    another try."""
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return Transient(
        EndpointUnreachable(f"cannot reach {url}: {why or type(exc).__name__}", url=url)
    )
