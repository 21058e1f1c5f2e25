"""Durations and rates as people type them, one syntax everywhere: the CLI's options, the
control API's bodies and scenario files all read ``90`` (seconds), ``90s``, ``+15m``,
``1h30m``, ``3d``, and ISO 8601 ``PT5M`` / ``P1DT2H`` as Azure writes them (ARM's
``notBeforeTimeout``); rates as ``2/h``, ``0.5/d``.

Here, in the contract, because every layer that reads a duration may import it (the VM
side's commands too) and it is pure text handling. What the seconds mean (platform time,
the server's clock) is the caller's to say.
"""

from __future__ import annotations

import math
import re

__all__ = ["DURATION_EXAMPLES", "UNITS", "format_duration", "parse_duration", "parse_rate"]

UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
#: What an error message shows as the accepted forms.
DURATION_EXAMPLES = "90, 90s, 5m, 1h30m, 3d or PT5M"

_NUMBER = r"(\d+(?:\.\d+)?)"
_PART = re.compile(_NUMBER + r"([smhd])")
_ISO = re.compile(
    rf"P(?:{_NUMBER}D)?(?:T(?:{_NUMBER}H)?(?:{_NUMBER}M)?(?:{_NUMBER}S)?)?", re.IGNORECASE
)
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*(s|m|h|d|sec|min|hour|day)\s*$")
_RATE_UNITS = {"sec": "s", "min": "m", "hour": "h", "day": "d"}


def _iso(text: str) -> float | None:
    """Seconds of an ISO 8601 duration (days, hours, minutes, seconds); None: not one."""
    found = _ISO.fullmatch(text)
    if found is None or not any(found.groups()) or text.upper().endswith("T"):
        return None
    days, hours, minutes, secs = (float(g or 0) for g in found.groups())
    return days * 86400 + hours * 3600 + minutes * 60 + secs


def parse_duration(value: object, what: str = "duration") -> float:
    """Seconds in ``value``: a number of seconds, ``[+]1h30m``-style text, or ISO 8601
    (``PT5M``). ValueError names what is wrong (``what`` says which setting it was)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{what} must be a duration like {DURATION_EXAMPLES}, not {value!r}")
    if isinstance(value, str):
        text = value.strip().removeprefix("+").strip().replace(" ", "")
        try:
            seconds = float(text)
        except ValueError:
            iso = _iso(text) if text[:1] in "pP" else None
            if iso is not None:
                seconds = iso
            else:
                lowered = text.lower()
                parts = _PART.findall(lowered)
                if not parts or "".join(n + u for n, u in parts) != lowered:
                    raise ValueError(
                        f"{what} {value!r} is not a duration like {DURATION_EXAMPLES}"
                    ) from None
                seconds = sum(float(n) * UNITS[u] for n, u in parts)
    else:
        seconds = float(value)
    if not math.isfinite(seconds):
        raise ValueError(f"{what} {value!r} is not a number of seconds")
    if seconds < 0:
        raise ValueError(f"{what} {value!r} must not be negative: time only moves forward")
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
