"""Whether this process may still serve its views and write: its standing in the fleet.

A process of a scaled-out fleet can stop at any moment (SIGSTOP, a paused VM, a long
pause, a partition from its database) and wake up not knowing that it was replaced, or
that its views fell behind while other front-ends showed VMs newer documents. What it
holds is vouched for only as of the last time it heard from the database: a leader that
was told it still leads, a follower whose views had caught up with the change log. The
cluster ``confirm``s its standing each time, as of the moment it asked; ``seconds``
later the standing lapses, at once, whatever the process was doing meanwhile (it is a
monotonic deadline, checked on every use, never a timer that must get to run).

While it has lapsed, the fabric fires no timer and writes nothing, and the metadata
endpoint answers nothing from its views: a VM's request waits a moment for the standing
to be confirmed again (by the leader's next check, or a follower's catch-up, or a reload
after stepping down), then is refused. ``on_lapse`` is called when a lapse is first
noticed, so that the cluster checks at once. A single server has nobody to hear from:
its standing never lapses.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable

from forewarn.fabric.clock import TimeSource, monotonic

__all__ = ["Standing"]


class Standing:
    """A deadline this process's views and writes are good until (``math.inf``: always)."""

    def __init__(self, clock: TimeSource = monotonic) -> None:
        self._clock = clock
        self.seconds: float | None = None
        #: False until ``require``: ``current`` is then always True (a hot path may read
        #: this attribute rather than call it: no clock read).
        self.lapses = False
        self._until = math.inf
        self._on_lapse: Callable[[], None] | None = None
        self._told = False
        self._waiters: list[asyncio.Future[None]] = []

    def require(self, seconds: float, on_lapse: Callable[[], None] | None = None) -> None:
        """Lapse ``seconds`` after each confirmation (none yet: lapsed now)."""
        self.seconds = seconds
        self.lapses = True
        self._on_lapse = on_lapse
        self._until = -math.inf

    def confirm(self, asked_at: float) -> None:
        """The database vouched for this process as of ``asked_at`` (this clock)."""
        if self.seconds is None:
            return
        self._until = max(self._until, asked_at + self.seconds)
        if self.current():
            self._told = False
            waiters, self._waiters = self._waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def withdraw(self) -> None:
        """Lapse now (a leader stepping down: its views are vouched for again only once
        they are reloaded from the database)."""
        if self.seconds is not None:
            self._until = -math.inf

    def current(self) -> bool:
        """True while confirmed recently enough; the first False calls ``on_lapse``."""
        if self._clock() < self._until:
            return True
        if not self._told:
            self._told = True
            if self._on_lapse is not None:
                self._on_lapse()
        return False

    async def wait(self, timeout: float) -> bool:
        """Wait until the standing is current, for at most ``timeout`` s; True if it is."""
        if self.current():
            return True
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(timeout):
                await waiter
        except TimeoutError:
            pass
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
        return self.current()
