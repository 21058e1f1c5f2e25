"""Keeps the collector's full passes off the request path.

A server's long-lived objects (the fleet, its state, and the connection of every VM) are
what a full collection walks; with 10,000 VMs that walk pauses every request for 100 ms
or more. So the heap is frozen (``gc.freeze``) when serving starts, and again once the
fleet has connected: after the connections stop growing fast, and whenever they have
doubled since the last freeze. Full passes are also made rarer. Frozen objects are still
freed by reference counting when they die; a young collection runs before each freeze so
that only live objects are frozen.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Callable

__all__ = ["HeapKeeper", "freeze_startup_heap"]

log = logging.getLogger(__name__)

#: Young generations as Python's defaults; full passes ten times rarer.
THRESHOLDS = (700, 10, 100)
#: How often the keeper looks at the number of connections.
CHECK_SECONDS = 2.0


def freeze_startup_heap() -> None:
    """Freeze everything alive before serving (the fleet, the loaded state)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)


class HeapKeeper:
    """Freezes the heap again as the fleet's connections arrive."""

    def __init__(self, connections: Callable[[], int], *, minimum: int = 256) -> None:
        """``connections()`` counts open connections; fewer than ``minimum`` new ones are
        not worth a freeze."""
        self._connections = connections
        self._minimum = minimum
        self.frozen_at = 0
        self.freezes = 0

    def check(self, previous: int) -> int:
        """One look: freeze when the fleet settled or doubled; returns the count seen."""
        now = self._connections()
        grew = now - self.frozen_at
        settled = now - previous < max(self._minimum, now // 20)
        if grew >= self._minimum and (settled or now >= 2 * max(self.frozen_at, 1)):
            gc.collect(1)  # young garbage goes first: only live objects are frozen
            gc.freeze()
            self.frozen_at = now
            self.freezes += 1
            log.debug("heap frozen with %d connections open", now)
        return now

    async def run(self) -> None:
        """Look every couple of seconds until cancelled."""
        seen = 0
        while True:
            await asyncio.sleep(CHECK_SECONDS)
            seen = self.check(seen)
