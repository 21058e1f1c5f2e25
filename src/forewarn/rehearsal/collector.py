"""The collector held off while the tracker's thread works.

That thread writes the fleet's poll rows (10,000 every five seconds) and grades and renders
the verdict (some 10^5 objects). Each row is a tuple: CPython takes every freed tuple of
the previous write off the young generation's count (untracked or not) and counts no tuple
made from its free list, so no young pass ran while the new rows were made, and one walked
10,000-22,000 of them at once, 5-20 ms holding the interpreter's lock against the event
loop, every five seconds; the verdict's young passes held it 5-11 ms at every report.
Reference counting frees all of it as ever; the next young pass after this runs as usual
(a verdict kept after it is frozen first: ``verdict_memo``).
A store write that hangs holds off only the collection of cycles meanwhile.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["collector_paused"]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic collection inside (for any thread: the collector is the process's)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
