"""Keeps the collector's full passes off the request path.

A server's long-lived objects (the fleet, its state, and the connection of every VM) are
what a full collection walks; with 10,000 VMs that walk pauses every request for 100 ms
or more. So the heap is frozen (``gc.freeze``) when serving starts, and again once the
fleet has connected: after the connections stop growing fast, whenever they have doubled
since the last freeze, and at every look for a few seconds after each of those (a VM's
first polls make its reader, its ticket and its reaction track: frozen as they come, they
never pile up for a pass of the middle generation). Full passes are also made rarer.
Frozen objects are still freed by reference counting when they die.

Before a freeze only the youngest generation is collected: collecting the middle one too
walks every object that arrived since the last freeze (when a fleet connects, its tens of
thousands of connection objects: 20 ms or more on the event loop, as long as the pass the
freeze is there to spare). What the middle generation may hold of garbage in reference
cycles is frozen with it; the endpoint breaks its connections' cycles itself when they
close (``RequestReader.drop``), so that is little.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Callable

__all__ = ["HeapKeeper", "freeze_imports", "freeze_startup_heap"]

log = logging.getLogger(__name__)

#: Young generations as Python's defaults; full passes ten times rarer.
THRESHOLDS = (700, 10, 100)
#: How often the keeper looks at the number of connections.
CHECK_SECONDS = 0.5
#: Looks after a freeze for the connections that freeze what the first polls made.
FOLLOW_UP_CHECKS = 8


def freeze_imports() -> None:
    """Freeze what the imports made, before the fleet is built: modules, classes and
    functions live as long as the process, and the full pass before serving
    (``freeze_startup_heap``) then walks only the fleet and its state, not every imported
    object again (some 50 ms of every start, whatever the fleet)."""
    gc.freeze()


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
        #: Looks left that freeze what the first polls made.
        self._follow_up = 0

    def check(self, previous: int) -> int:
        """One look: freeze when the fleet settled or doubled, and at the looks that follow
        such a freeze; returns the count seen."""
        now = self._connections()
        grew = now - self.frozen_at
        settled = now - previous < max(self._minimum, now // 20)
        if grew >= self._minimum and (settled or now >= 2 * max(self.frozen_at, 1)):
            self._freeze(now)
            self._follow_up = FOLLOW_UP_CHECKS
        elif self._follow_up:
            self._follow_up -= 1
            self._freeze(now)
        return now

    def _freeze(self, connections: int) -> None:
        gc.collect(0)  # the youngest garbage goes first (see the module's docstring)
        gc.freeze()
        self.frozen_at = connections
        self.freezes += 1
        log.debug("heap frozen with %d connections open", connections)

    async def run(self) -> None:
        """Look every couple of seconds until cancelled."""
        seen = 0
        while True:
            await asyncio.sleep(CHECK_SECONDS)
            seen = self.check(seen)
