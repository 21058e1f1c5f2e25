"""Durations and rates as people write them in scenario files: ``90s``, ``+15m``,
``1h30m``, ``3d``; ``2/h``, ``0.5/d``. Always platform time: the runner divides by the
server's time scale."""

from __future__ import annotations

import math
import re

__all__ = ["UNITS", "format_duration", "parse_duration", "parse_rate"]

UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}

_PART = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*(s|m|h|d|sec|min|hour|day)\s*$")
_RATE_UNITS = {"sec": "s", "min": "m", "hour": "h", "day": "d"}


def parse_duration(value: object, what: str = "duration") -> float:
    """Seconds in ``value``: a number of seconds, or ``[+]1h30m``-style text.

    ValueError names what is wrong (``what`` says which setting it was).
    """
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a duration like 90s, 15m, 2h or 3d, not {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip().removeprefix("+").strip().replace(" ", "")
        try:
            seconds = float(text)
        except ValueError:
            parts = _PART.findall(text)
            if not parts or "".join(n + u for n, u in parts) != text:
                raise ValueError(
                    f"{what} {value!r} is not a duration like 90s, 15m, 2h, 1h30m or 3d"
                ) from None
            seconds = sum(float(n) * UNITS[u] for n, u in parts)
    else:
        raise ValueError(f"{what} must be a duration like 90s, 15m, 2h or 3d, not {value!r}")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{what} {value!r} must be a positive duration")
    return seconds


def parse_rate(value: object, what: str = "rate") -> float:
    """Arrivals per second in ``2/h``-style text (or a number per hour)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        per_second = float(value) / 3600
    elif isinstance(value, str) and (found := _RATE.match(value)):
        unit = _RATE_UNITS.get(found.group(2), found.group(2))
        per_second = float(found.group(1)) / UNITS[unit]
    else:
        raise ValueError(f"{what} {value!r} is not a rate like 2/h, 0.5/d or 10/m")
    if not math.isfinite(per_second) or per_second < 0:
        raise ValueError(f"{what} {value!r} must not be negative")
    return per_second


def format_duration(seconds: float) -> str:
    """``seconds`` in the largest units that say it exactly enough (``1h30m``, ``45s``)."""
    if seconds < 0:
        return "-" + format_duration(-seconds)
    if seconds < 60:
        return f"{seconds:.3g}s" if seconds != int(seconds) else f"{int(seconds)}s"
    out = []
    rest = round(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, rest = divmod(rest, size)
        if count:
            out.append(f"{count}{unit}")
    return "".join(out[:2])
