"""What both lean clients (the blocking ``syncwire``, the async ``wire``) do alike around
their own HTTP/1.1: parse an ``http://`` endpoint, write a request's target, and say what
a connection that failed means. Standard library only (``urllib.parse`` only for a URL
of an unusual shape: ``urlparts``), no I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING

from forewarn.client.urlparts import query, split

if TYPE_CHECKING:
    from forewarn.client.core import RequestSpec, Transient

__all__ = ["USER_AGENT", "http_origin", "request_target", "unreachable"]

#: What identifies the client to the endpoint.
USER_AGENT = "forewarn-client"


def http_origin(base: str) -> tuple[str, int, str]:
    """(host, port, authority) of ``base``; ValueError for anything but ``http://``."""
    scheme, netloc, hostname, port, _ = split(base)
    if scheme != "http" or not hostname:
        raise ValueError(f"the lean client speaks http:// only, not {base!r}")
    return hostname, port or 80, netloc


def request_target(spec: RequestSpec, authority: str) -> tuple[str, str]:
    """The request line's target of ``spec`` (path and query), and the URL errors name."""
    target = split(spec.url)[4] or "/"
    if spec.params:
        target += "?" + query(spec.params)
    return target, f"http://{authority}{target}"


def unreachable(url: str, exc: Exception) -> Transient:
    """A connection refused, reset or closed mid-answer, or bytes that are no HTTP: worth
    another try."""
    from forewarn.client.core import Transient  # ``http1`` imports this module alone
    from forewarn.client.errors import EndpointUnreachable

    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return Transient(
        EndpointUnreachable(f"cannot reach {url}: {why or type(exc).__name__}", url=url)
    )
