"""Entity tags of the rehearsal verdict, and ``If-None-Match`` against them.

The verdict is graded at the clock's current instant (kept between requests only while
the clock is still and no fact was written), so its ``generated_at`` differs every time
on a real clock even when nothing else does. Its tag
is a hash of every byte of the encoded verdict except that instant: a weak validator
(``W/``), since two answers with the same tag may differ in when they were graded and in
nothing else. Whatever time does to the grade (a VM silent past ``stale_after``, how long
it has been silent), and every fact recorded, is in the bytes hashed: a 304 is never a
verdict that moved on. Hashing 8.8 MB (10,000 VMs) takes some 5 ms, on the tracker's
thread with the grading.

The HTML page draws each event's timeline up to the grading instant when the event has no
NotBefore: its tag keeps the instant then (a page whose drawing moves with the clock).
"""

from __future__ import annotations

import hashlib

import msgspec

__all__ = ["matches", "verdict_tag"]

_GENERATED = b'{"generated_at":'


def verdict_tag(body: bytes, kind: str, *, generated_at: float | None) -> str:
    """The weak entity tag of an encoded verdict ``body`` as ``kind`` (``json``, ``html``:
    one verdict, two representations), its ``generated_at`` left out (None: kept, for a
    representation that draws the time itself)."""
    hashed = body
    if generated_at is not None:
        skip = _GENERATED + msgspec.json.encode(generated_at)
        if body.startswith(skip):  # else the whole body: never a match it should not be
            hashed = body[len(skip) :]
    digest = hashlib.sha1(hashed, usedforsecurity=False).hexdigest()[:32]
    return f'W/"{kind}-{digest}"'


def matches(if_none_match: str | None, tag: str) -> bool:
    """Whether an ``If-None-Match`` header names ``tag`` (weak comparison, as RFC 9110
    has it for this header; ``*`` matches any current answer)."""
    if not if_none_match:
        return False
    opaque = tag.removeprefix("W/")
    for given in if_none_match.split(","):
        given = given.strip()
        if given == "*" or given.removeprefix("W/") == opaque:
            return True
    return False
