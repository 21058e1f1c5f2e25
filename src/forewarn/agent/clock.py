"""The agent's own clock: the one place the agent reads time.

The agent runs on a VM, far from the emulator, so it never imports the fabric's clock.
Wall time compares with ``NotBefore``; monotonic time measures durations and sleeps.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime

__all__ = ["AgentClock"]


class AgentClock:
    """Wall time (aware UTC) and monotonic time, with replaceable sources for tests."""

    def __init__(
        self,
        wall: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._wall = wall
        self._monotonic = monotonic

    def time(self) -> float:
        """POSIX seconds now."""
        return self._wall()

    def now(self) -> datetime:
        """Now as an aware UTC datetime, comparable with an event's ``not_before``."""
        return datetime.fromtimestamp(self._wall(), tz=UTC)

    def monotonic(self) -> float:
        """Seconds on a clock that never jumps (durations, timeouts)."""
        return self._monotonic()

    def seconds_until(self, when: datetime) -> float:
        """Seconds from now until ``when`` (negative once it has passed)."""
        return when.timestamp() - self._wall()

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` (nothing for zero or less)."""
        if seconds > 0:
            await asyncio.sleep(seconds)
