"""Where the metadata endpoint is: explicit URL, environment, or the default.

``resolve_endpoint`` is the cheap rule every client applies; ``discovery`` adds DHCP
option 245 (only ``forewarn discover`` and the agent read lease files).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from forewarn.client.errors import InvalidEndpoint
from forewarn.client.urlparts import split

__all__ = ["DEFAULT_ENDPOINT", "LEGACY_VARIABLE", "URL_VARIABLE", "resolve_endpoint"]

DEFAULT_ENDPOINT = "http://169.254.169.254"
URL_VARIABLE = "FOREWARN_IMDS_URL"
LEGACY_VARIABLE = "SCHEDULEDEVENTSIP"


def _as_url(value: str, origin: str) -> str:
    """A base URL from a URL or a bare ``host[:port]``, without a trailing slash."""
    text = value.strip()
    if not text:
        raise InvalidEndpoint(f"{origin} is empty")
    if "://" not in text:
        text = "http://" + text
    try:
        scheme, _, hostname, port, path = split(text)  # a port not a number raises here
    except ValueError as exc:
        raise InvalidEndpoint(f"{origin} {value!r} is not a URL: {exc}") from None
    scheme = scheme.lower()
    if scheme not in ("http", "https") or not hostname:
        raise InvalidEndpoint(f"{origin} {value!r} must be an http:// URL with a host")
    host = hostname.lower()
    host = f"[{host}]" if ":" in host else host
    netloc = host if port is None else f"{host}:{port}"
    return f"{scheme}://{netloc}{path}".rstrip("/")


def resolve_endpoint(url: str | None = None, *, environ: Mapping[str, str] | None = None) -> str:
    """The endpoint to use: ``url`` > $FOREWARN_IMDS_URL > $SCHEDULEDEVENTSIP > the default.

    ``SCHEDULEDEVENTSIP`` holds an address (the articles' legacy discovery variable); a URL
    is accepted too. Empty variables count as unset.
    """
    env = os.environ if environ is None else environ
    if url is not None:
        return _as_url(url, "endpoint URL")
    for name in (URL_VARIABLE, LEGACY_VARIABLE):
        value = env.get(name, "").strip()
        if value:
            return _as_url(value, f"${name}")
    return DEFAULT_ENDPOINT
