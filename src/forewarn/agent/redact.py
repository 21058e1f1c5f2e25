"""Secrets out of printed configurations: header values, passwords in URLs, tokens.

``forewarn agent run --print-config`` shows what the agent would run with; like
``serve --print-config`` it must not put a bearer token or a Redis password on a terminal
or in a ticket. Values are replaced by "***", so the shape stays visible.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MASK", "redact"]

MASK = "***"
_SECRET_KEY = re.compile(r"(authorization|cookie|token|password|passwd|secret|api[-_]?key)", re.I)


def _url(value: str) -> str:
    if "@" not in value or "://" not in value:
        return value
    from urllib.parse import urlsplit, urlunsplit  # not loaded by an agent that only runs

    try:
        parts = urlsplit(value)
    except ValueError:
        return value
    if parts.password is None:
        return value
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:{MASK}@{host}"))


def redact(value: Any, key: str = "") -> Any:
    """``value`` with every secret-looking entry masked (dicts and lists walked)."""
    if isinstance(value, dict):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, key) for v in value]
    if isinstance(value, str):
        if _SECRET_KEY.search(key) and value:
            return MASK
        return _url(value)
    return value
