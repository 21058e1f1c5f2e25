"""How many event flows work on the agent's loop at once.

Every step of a flow writes the state file (synced to disk) on the loop that also answers
/healthz and signals. A document of 10,000 new events would otherwise make 10,000 flows
ready at once, and one turn of the loop would take minutes. A flow holds a ``Turn`` while
it works and gives it back while it waits (for the event to change, for its handlers, for
the endpoint), so at most ``FLOWS_AT_WORK`` flows are ready at any moment.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

__all__ = ["APPROVALS_AT_ONCE", "FLOWS_AT_WORK", "Turn"]

FLOWS_AT_WORK = 16
APPROVALS_AT_ONCE = 8


class Turn:
    """One flow's share of a semaphore: taken to work, given back to wait."""

    __slots__ = ("_gate", "_held")

    def __init__(self, gate: asyncio.Semaphore) -> None:
        self._gate = gate
        self._held = False

    async def take(self) -> None:
        """Wait for a turn (a cancelled wait takes nothing)."""
        await self._gate.acquire()
        self._held = True

    def give(self) -> None:
        """Give the turn back (nothing if not held)."""
        if self._held:
            self._held = False
            self._gate.release()

    @contextlib.asynccontextmanager
    async def away(self) -> AsyncIterator[None]:
        """Without the turn for the block (a wait), then take it again."""
        self.give()
        try:
            yield
        finally:
            await self.take()
