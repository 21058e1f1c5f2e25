"""The items of an ``Accept``-style header and their weights (RFC 9110 section 12.4.2):
``text/html;q=0.9, */*;q=0.1`` or ``gzip;q=0, br``, for choosing what to answer."""

from __future__ import annotations

__all__ = ["weighted"]


def weighted(header: str) -> dict[str, float]:
    """Each item of ``header``, lower-cased, with its q value (1 when none is given, 0
    when it is not a number)."""
    out: dict[str, float] = {}
    for part in header.split(","):
        item, _, params = part.partition(";")
        q = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if item.strip():
            out[item.strip().lower()] = q
    return out
