"""A request path as its segments: split on the raw path's slashes, then each decoded.

Decoding a whole path before splitting it (as ASGI's ``scope["path"]`` is) turns an
encoded slash into a separator: a VM named ``%2f`` becomes ARM's list of VMs, an event id
``x%2fapprove`` the control API's approval. Every listener splits the path as sent
(``scope["raw_path"]`` or the request line) and decodes each segment after; a segment that
decodes to what no Azure name (nor any route's literal) can hold, a ``/``, a ``\\``, a
control character, invalid UTF-8, or a lone ``.`` or ``..``, is refused as a name, never
taken for another route.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote

__all__ = ["decode_segment", "decoded_path", "raw_path", "unfit"]

_UNFIT = re.compile(r"[/\\\x00-\x1f\x7f-\x9f]")


def raw_path(scope: Mapping[str, Any]) -> str:
    """An ASGI request's path as sent (``raw_path``, without the query some servers and
    test transports leave on it), or its decoded ``path`` re-encoded where none is given."""
    raw = scope.get("raw_path")
    if raw is None:
        return quote(scope["path"], safe="/:@!$&'()*+,;=~-._")
    return bytes(raw).split(b"?", 1)[0].decode("latin-1")


def unfit(name: str) -> bool:
    """Whether a decoded segment is no name: ``/``, ``\\``, control characters, ``.``, ``..``."""
    return name in (".", "..") or _UNFIT.search(name) is not None


def decode_segment(segment: str) -> str | None:
    """``segment`` percent-decoded (UTF-8), or None when it decodes to no name."""
    if "%" in segment:
        try:
            segment = unquote(segment, errors="strict")
        except UnicodeDecodeError:
            return None
    return None if unfit(segment) else segment


def decoded_path(raw: str) -> str | None:
    """``raw`` with each of its segments decoded, so that routing the result on ``/`` is
    routing the raw path's segments; None when a segment decodes to no name. (Empty
    segments stay, as sent.)"""
    if "%" not in raw and "\\" not in raw and "/." not in raw:
        return raw  # nothing to decode or refuse: the usual request
    out: list[str] = []
    for segment in raw.split("/"):
        if not segment:
            out.append(segment)
            continue
        decoded = decode_segment(segment)
        if decoded is None:
            return None
        out.append(decoded)
    return "/".join(out)
