"""A large verdict encoded as JSON in pieces, so the endpoint's loop is not kept waiting.

``msgspec.json.encode`` turns a whole value into bytes in one C call that holds the
interpreter's lock: at 10,000 VMs (about 9 MB) some 20-30 ms, during which the event loop
that answers the VMs, on another thread, cannot run (``bench/fleet_tail.py --streams 100
--report-every 10`` showed a stall of that length at each report). Encoded field by field,
and long lists a slice at a time, the interpreter may switch threads between pieces (every
millisecond: ``serving.py`` sets the switch interval); the bytes are the same.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["encode_in_pieces"]

#: Items of a list encoded by one call (a few hundred rows: well under a millisecond).
SLICE = 200

_encoder = msgspec.json.Encoder()


def encode_in_pieces(value: msgspec.Struct, *, slice_size: int = SLICE) -> bytes:
    """``msgspec.json.encode(value)``, byte for byte, made of many short encodes (a struct
    encoded as an array, or with fields left out when at their defaults, in one)."""
    config = value.__struct_config__
    if config.array_like or config.omit_defaults or config.tag is not None:
        return _encoder.encode(value)
    parts: list[bytes] = []
    names = zip(type(value).__struct_fields__, type(value).__struct_encode_fields__, strict=True)
    for attribute, name in names:
        parts.append(b"," if parts else b"{")
        parts.append(_encoder.encode(name))
        parts.append(b":")
        field = getattr(value, attribute)
        if isinstance(field, list) and len(field) > slice_size:
            parts.append(_encode_list(field, slice_size))
        else:
            parts.append(_encoder.encode(field))
    parts.append(b"}" if parts else b"{}")
    return b"".join(parts)


def _encode_list(items: list[Any], slice_size: int) -> bytes:
    parts = [b"["]
    for start in range(0, len(items), slice_size):
        if start:
            parts.append(b",")
        parts.append(_encoder.encode(items[start : start + slice_size])[1:-1])
    parts.append(b"]")
    return b"".join(parts)
