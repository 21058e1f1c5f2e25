"""The collector held off while the tracker's thread makes and frees a verdict.

Grading and rendering the verdict of a 10,000-VM rehearsal makes some 10^5 objects in
0.1-0.6 s (one read of the store, then computation: the collector is not held off for
long, and a read that hangs holds off only the collection of cycles meanwhile). Each young
collection it triggered walked those young objects for 5-11 ms holding the interpreter's
lock, and the event loop's polls waited. They are freed by reference counting as ever; the
next young pass after this runs as usual.
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
