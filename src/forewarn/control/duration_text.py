"""Durations as text in control API bodies (``"duration_seconds": "5m"``), read by the one
parser (``forewarn.contract.durations``) and described exactly in the OpenAPI document.

The document must say precisely what the server takes (``tests/control``'s schemathesis
run holds it to that), and a regular expression cannot say "at most 30 days" of a sum.
So the text the API takes is the parser's syntax with a bounded number of digits per
unit (at most 2 of days, 3 of hours, 4 of minutes, 6 of seconds: under 160 days in all,
within ``MAX_SECONDS``), and, for a window, no part that is zero; a number of seconds is
sent as a JSON number. ``90s``, ``5m``, ``1h30m``, ``3d``, ``PT5M``, ``P1DT2H`` all read.
"""

from __future__ import annotations

import re

from forewarn.contract.durations import parse_duration

__all__ = ["MAX_SECONDS", "NONZERO", "ZERO_ALLOWED", "duration_text"]

#: The longest a duration given as text can be (99d 999h 9999m 999999.999s is less).
MAX_SECONDS = 366 * 86400.0
_DIGITS = {"d": 2, "h": 3, "m": 4, "s": 6}


def _number(digits: int, zero: bool) -> str:
    if zero:
        return f"[0-9]{{1,{digits}}}(?:\\.[0-9]{{1,3}})?"
    return f"(?:[1-9][0-9]{{0,{digits - 1}}}(?:\\.[0-9]{{1,3}})?|0\\.[0-9]{{0,2}}[1-9])"


def _sequence(units: str, zero: bool) -> str:
    """Parts in ``units``' order, each optional, at least one."""
    parts = [_number(_DIGITS[u.lower()], zero) + u for u in units]
    alternatives = [p + "".join(f"(?:{q})?" for q in parts[i + 1 :]) for i, p in enumerate(parts)]
    return "(?:" + "|".join(alternatives) + ")"


def _pattern(zero: bool) -> str:
    compact = _sequence("dhms", zero)
    clock = _sequence("HMS", zero)
    iso = f"P(?:{_number(_DIGITS['d'], zero)}D(?:T{clock})?|T{clock})"
    return f"(?:{compact}|{iso})"


#: The JSON Schema ``pattern`` of a window (no zero part) and of a start (zero allowed).
NONZERO = "^" + _pattern(zero=False) + "$"
ZERO_ALLOWED = "^" + _pattern(zero=True) + "$"
_FULL = {NONZERO: re.compile(_pattern(zero=False)), ZERO_ALLOWED: re.compile(_pattern(zero=True))}


def duration_text(value: str, pattern: str, name: str) -> float:
    """Seconds in ``value``, which must match ``pattern`` whole (ValueError naming
    ``name`` and what it takes)."""
    if _FULL[pattern].fullmatch(value) is None:
        raise ValueError(
            f"{name} {value!r} is not a duration the API takes: a number of seconds, or text "
            "like 90s, 5m, 1h30m, 3d or PT5M (at most 2 digits of days, 3 of hours, 4 of "
            "minutes, 6 of seconds" + (", none of them zero)" if pattern == NONZERO else ")")
        )
    return parse_duration(value, name)
