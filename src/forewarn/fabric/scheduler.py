"""Fires the fabric's timers: sleeps until the next due transition, never polls.

It wakes early when the fabric changes (a new operation may be due sooner) or when a
virtual clock jumps. While the store refuses writes it retries every couple of seconds.

``stop`` ends it without relying on a cancellation being delivered: on Python 3.11,
``asyncio.wait_for`` returns its result and drops a cancellation that arrives in the
loop turn its awaitable completes in (fixed in 3.12), and this loop, woken by every
change, is often at that very turn; a leader stepping down that waited for its cancelled
scheduler then waited for ever, its timers still firing. So the wait here is
``asyncio.timeout`` (which keeps such a cancellation) and ``stop`` also ends the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math

from forewarn.fabric.clock import Clock
from forewarn.fabric.engine import Fabric
from forewarn.fabric.errors import StoreUnavailable

__all__ = ["Scheduler"]

log = logging.getLogger(__name__)

#: How often a failing store is tried again.
STORE_RETRY_SECONDS = 2.0


class Scheduler:
    """Runs ``fabric.run_due()`` whenever a timer is due."""

    def __init__(self, fabric: Fabric, clock: Clock) -> None:
        self._fabric = fabric
        self._clock = clock
        self._wake = asyncio.Event()
        self._runs = 0  # each ``run`` loops while it is the latest one and not stopped
        fabric.on_change(self._wake.set)
        clock.on_jump(self._wake.set)

    def stop(self) -> None:
        """End ``run`` at once, before it fires anything more (no cancellation needed)."""
        self._runs += 1
        self._wake.set()

    async def run(self) -> None:
        """Loop until cancelled or ``stop``ped (a later ``run`` also ends this one)."""
        self._runs += 1
        mine = self._runs
        self._wake.set()  # (an earlier run, waiting, sees it is over)
        while mine == self._runs:
            self._wake.clear()
            try:
                await self._fabric.relayed_first()  # a leader: followers' approvals first
                if mine != self._runs:
                    return
                self._fabric.run_due()
            except StoreUnavailable as exc:  # (the relayed approvals could not be read)
                log.warning("timers wait for the store: %s", exc)
                await asyncio.sleep(STORE_RETRY_SECONDS)
                continue
            except Exception:  # a bad timer must not stop every other timer
                log.exception("a scheduled transition failed; retrying in 1 s")
                await asyncio.sleep(1.0)
                continue
            due = self._fabric.next_due()
            delay = math.inf if due is None else self._clock.real_seconds_until(due)
            if self._fabric.store_error() is not None:
                # Writes are failing: try again in a moment (a probe write when nothing
                # else is due), so that the store's recovery is noticed by itself.
                if delay > STORE_RETRY_SECONDS:
                    self._fabric.probe_store()
                delay = STORE_RETRY_SECONDS if delay <= 0 else min(delay, STORE_RETRY_SECONDS)
            timeout = None if math.isinf(delay) else max(delay, 0.0)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wake.wait()
