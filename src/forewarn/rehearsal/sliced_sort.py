"""Sorting a million rows off the event loop without holding it.

The grading runs on the tracker's thread, but a sort runs in C with the interpreter's
lock held from start to end: a million names sorted after a region rollout held the
event loop, and every VM's poll with it, for 0.8 s. ``sort_sliced`` sorts the same rows
into the same order (stable, as ``sorted``) in pieces of at most a few ``SLICE`` rows
each, giving the lock back between them: the rows cut into slices, each sorted; then
split at values sampled from every slice (regular sampling), so each bucket holds about
a slice's rows from all of them, and each bucket sorted (its pieces already in order: a
merge) and handed out in turn. The keys and positions are let go in pieces too
(``sliced_drop.py``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from forewarn.rehearsal.sliced_drop import SLICE, drop_sliced, give_way

__all__ = ["SLICE", "sort_sliced"]

T = TypeVar("T")


def sort_sliced(items: Iterable[T], key: Callable[[T], Any]) -> list[T]:
    """``sorted(items, key=key)``, the interpreter's lock given back every ``SLICE`` or
    so rows of sorting."""
    rows = list(items)
    if len(rows) <= SLICE:
        return sorted(rows, key=key)
    keys = [key(row) for row in rows]  # each key once (Python: the lock is shared)
    of = keys.__getitem__
    # positions sorted by their rows' keys, a slice at a time (stable: ascending within)
    slices = []
    for start in range(0, len(rows), SLICE):
        slices.append(sorted(range(start, min(start + SLICE, len(rows))), key=of))
        give_way()
    step = max(1, SLICE // len(slices))
    sample = sorted(keys[part[j]] for part in slices for j in range(step - 1, len(part), step))
    splitters = sample[len(slices) - 1 :: len(slices)]
    out: list[T] = []
    low = [0] * len(slices)
    for bound in [*splitters, None]:
        # every row keyed up to ``bound`` (equal keys never split): earlier slices'
        # pieces first, so a stable sort keeps ties in their order
        bucket: list[int] = []
        for n, part in enumerate(slices):
            high = len(part) if bound is None else bisect_right(part, bound, low[n], key=of)
            bucket += part[low[n] : high]
            low[n] = high
        bucket.sort(key=of)  # sorted runs, one from each slice: a merge
        out += [rows[i] for i in bucket]
        give_way()
    drop_sliced(keys, sample, *slices)  # a key and a position a row: not all at return
    return out
