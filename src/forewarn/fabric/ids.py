"""Ids of events, operations and rollouts: unique, and ordered by when they were made.

The stores key tables and indexes by these ids. Random ids put each insert on a random
page of every index: the more rows, the more distinct pages a commit writes and a WAL
checkpoint copies back, so creating an operation cost more with every live one (issue
17: a quarter slower at 50,000 live operations than at 1,000). Ids that begin with the
time go to the last pages of each index, however many rows it holds.

Event ids are still GUIDs, as Azure's are (RFC 9562 version 7: milliseconds since the
epoch, then 74 random bits); operation and rollout tokens are still 12 hex digits (40
bits of milliseconds, 8 random, one higher than the last when the clock has not moved
on, so that a process never makes the same token twice).
"""

from __future__ import annotations

import os
import threading
import time

__all__ = ["new_event_id", "new_token"]

_MS_MASK = (1 << 48) - 1
_RAND_A = (1 << 12) - 1
_RAND_B = (1 << 62) - 1
_TOKEN_MASK = (1 << 48) - 1


def new_event_id() -> str:
    """A version-7 GUID in upper case (as the endpoint shows event ids)."""
    ms = time.time_ns() // 1_000_000 & _MS_MASK
    rand = int.from_bytes(os.urandom(10))
    value = (ms << 80) | (0x7 << 76) | ((rand >> 62) & _RAND_A) << 64 | (0b10 << 62)
    h = f"{value | (rand & _RAND_B):032X}"  # uuid.UUID's form, without making one
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class _Tokens:
    """12 hex digits, increasing within the process."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def __call__(self) -> str:
        ms = time.time_ns() // 1_000_000
        value = ((ms << 8) | os.urandom(1)[0]) & _TOKEN_MASK
        with self._lock:
            if value <= self._last and self._last - value < 1 << 40:  # (not a wrap)
                value = (self._last + 1) & _TOKEN_MASK
            self._last = value
        return f"{value:012x}"


new_token = _Tokens()
