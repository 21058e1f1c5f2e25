"""JSON bodies read and written with the standard library, exactly as msgspec does.

A VM command reads a document of a few hundred bytes and writes one StartRequests body:
loading msgspec for that cost it ~20 ms of start-up (decimal, uuid, typing_extensions…),
where ``json`` is loaded by the commands anyway. ``loads`` accepts what
``msgspec.json.decode`` accepts, with equal values (a duplicate key keeps its last value),
and refuses what it refuses: NaN and Infinity, a number beyond a float's range, an
integer of more than 4,300 characters or more digits than ``int`` reads, an escaped lone
surrogate, bytes that are not UTF-8 (a BOM too), nesting deeper than the interpreter's
recursion limit. ``dumps`` writes msgspec's bytes (floats aside).
tests/contract/test_jsontext.py gives both the same inputs; the emulator keeps msgspec.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["JSONFormatError", "dumps", "loads"]


class JSONFormatError(ValueError):
    """Bytes that are not JSON; the message says what is wrong."""


_INFINITY = float("inf")
#: A ``\\u`` escape of a surrogate: only then can the decoded text hold a lone one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _constant(name: str) -> Any:
    raise JSONFormatError(f"{name} is not a JSON value")


def _float(text: str) -> float:
    value = float(text)
    if value == _INFINITY or value == -_INFINITY:
        raise JSONFormatError(f"number out of range: {text[:40]}")
    return value


#: msgspec reads no integer longer than this, its sign included, whatever the digits
#: ``int`` is allowed to read (``sys.set_int_max_str_digits``, which binds both).
_INT_CHARS = 4300


def _int(text: str) -> int:
    if len(text) > _INT_CHARS:
        raise JSONFormatError(f"integer out of range: {text[:40]}…")
    return int(text)


_DECODER = json.JSONDecoder(parse_float=_float, parse_constant=_constant)
#: For a text that could hold such an integer: each integer through ``_int``.
_LONG_DECODER = json.JSONDecoder(parse_float=_float, parse_constant=_constant, parse_int=_int)


def _lone_surrogate(value: Any) -> bool:
    """Whether a string anywhere in ``value`` (keys too) holds a lone surrogate: an
    escaped high surrogate with no low one after it, or the other way round."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
    return False


def loads(body: bytes | bytearray | memoryview | str) -> Any:
    """The JSON value in ``body`` (UTF-8, or text); JSONFormatError when it is none."""
    try:
        if isinstance(body, str):
            body.encode()  # msgspec reads text as UTF-8: a lone surrogate is refused
            text = body
        else:
            text = str(body, "utf-8")
        value = (_DECODER if len(text) <= _INT_CHARS else _LONG_DECODER).decode(text)
    except JSONFormatError:
        raise
    except json.JSONDecodeError as exc:
        raise JSONFormatError(f"{exc.msg} (character {exc.pos})") from None
    except UnicodeError:
        raise JSONFormatError("not valid UTF-8") from None
    except ValueError as exc:  # an integer of more digits than int() reads
        raise JSONFormatError(str(exc)) from None
    except RecursionError:
        raise JSONFormatError("nested too deeply") from None
    if _SURROGATE_ESCAPE.search(text) and _lone_surrogate(value):
        raise JSONFormatError("a lone surrogate in a string")
    return value


def dumps(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON: for strings, integers, booleans, None, lists and
    dicts of them, byte for byte what ``msgspec.json.encode`` writes (floats are written
    as Python spells them, ``1e+16`` where msgspec writes ``1e16``; NaN is a ValueError).
    A lone surrogate is a UnicodeEncodeError, as with msgspec."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
