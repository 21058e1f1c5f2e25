"""What both of the client's HTTP/1.1 transports (the blocking ``syncwire``, the async
``wire``) do alike: parse an endpoint's origin, write a request's target, and say what a
connection that failed means. Standard library only (``urllib.parse`` only for a URL of
an unusual shape: ``urlparts``), no I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING

from forewarn.client.urlparts import query, split

if TYPE_CHECKING:
    from forewarn.client.core import RequestSpec, Transient

__all__ = ["USER_AGENT", "http_origin", "request_target", "unreachable"]

#: What identifies the client to the endpoint.
USER_AGENT = "forewarn-client"


def http_origin(base: str) -> tuple[str, int, str, bool]:
    """(host, port, authority, over TLS) of ``base``; ValueError for anything but
    ``http://`` or ``https://``. The metadata endpoint is plain http:// on a link-local
    address; https:// (a proxy of it, a test rig) goes over the standard library's ssl."""
    scheme, netloc, hostname, port, _ = split(base)
    if scheme not in ("http", "https") or not hostname:
        raise ValueError(f"the client speaks http:// and https:// only, not {base!r}")
    tls = scheme == "https"
    return hostname, port or (443 if tls else 80), netloc, tls


def request_target(spec: RequestSpec, authority: str) -> tuple[str, str]:
    """The request line's target of ``spec`` (path and query), and the URL errors name."""
    target = split(spec.url)[4] or "/"
    if spec.params:
        target += "?" + query(spec.params)
    scheme = "https" if spec.url.startswith("https:") else "http"
    return target, f"{scheme}://{authority}{target}"


def unreachable(url: str, exc: Exception) -> Transient:
    """A connection refused, reset or closed mid-answer, or bytes that are no HTTP: worth
    another try."""
    from forewarn.client.core import Transient  # ``http1`` imports this module alone
    from forewarn.client.errors import EndpointUnreachable

    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return Transient(
        EndpointUnreachable(f"cannot reach {url}: {why or type(exc).__name__}", url=url)
    )
