"""Plain ``http://host:port/path`` URLs split without ``urllib.parse``.

``urllib.parse`` loads ``ipaddress`` (together ~3 ms of a VM command's start-up) to read an
endpoint URL that is nearly always ``http://169.254.169.254`` or ``http://host:port``. A
URL of that plain shape (ASCII host name or IPv4 address, a port of digits, a path with
no query) is split by a pattern into exactly what ``urlsplit`` makes of it; any other
(brackets, user info, a query, spaces, non-ASCII…) goes to ``urlsplit`` itself, so the
answers and the errors are its own. tests/client/test_urlparts.py compares the two.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

__all__ = ["query", "split"]

_PLAIN = re.compile(
    r"([A-Za-z][A-Za-z0-9+.-]*)://([A-Za-z0-9._-]+)(?::([0-9]{1,5}))?"
    r"(/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?"
)
#: What ``urllib.parse.quote_plus`` never escapes.
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~")


@lru_cache(maxsize=128)  # as urlsplit's: a client splits its endpoint's URL every request
def split(url: str) -> tuple[str, str, str | None, int | None, str]:
    """``urlsplit(url)``'s scheme, netloc, hostname, port and path; ValueError where
    ``urlsplit`` or its ``port`` raises one."""
    plain = _PLAIN.fullmatch(url)
    if plain is not None:
        scheme, host, port, path = plain.groups()
        if port is None or int(port) <= 65535:
            number = None if port is None else int(port)
            netloc = host if port is None else f"{host}:{port}"
            return scheme.lower(), netloc, host.lower(), number, path or ""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.scheme, parts.netloc, parts.hostname, parts.port, parts.path


def query(params: Mapping[str, str]) -> str:
    """``urllib.parse.urlencode(params)``."""
    if all(_SAFE.issuperset(k) and _SAFE.issuperset(v) for k, v in params.items()):
        return "&".join(f"{k}={v}" for k, v in params.items())
    from urllib.parse import urlencode

    return urlencode(params)
