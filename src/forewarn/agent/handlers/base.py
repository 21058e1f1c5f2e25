"""What every handler is: an async ``prepare`` (before the event) and ``recover`` (after).

A handler reports failure by raising ``HandlerFailed`` (or anything else); it never
decides about approval. Its time limit is enforced by the runner, which cancels it:
handlers that start processes must end them when cancelled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from forewarn.agent.clock import AgentClock
from forewarn.agent.events import EventView, wire_event

__all__ = ["Handler", "HandlerContext", "HandlerFailed", "Phase"]

Phase = str  # "prepare" or "recover"


class HandlerFailed(Exception):
    """A handler did not do its job; the message says what went wrong."""


@dataclass(frozen=True)
class HandlerContext:
    """Everything a handler may read about the event it handles."""

    event: EventView
    vm_name: str
    phase: Phase
    #: NotBefore minus the safety margin (None for a Started event or in recovery).
    deadline: datetime | None
    #: Monotonic instant the runner cancels this handler at.
    expires: float
    clock: AgentClock = field(default_factory=AgentClock)
    options: dict[str, Any] = field(default_factory=dict)
    #: Told the pid of each process the handler starts (the state file keeps it).
    on_process: Callable[[int], None] | None = None

    @property
    def event_json(self) -> dict[str, Any]:
        """The event in its wire form."""
        return wire_event(self.event)

    def time_left(self) -> float:
        """Seconds until the runner cancels this handler."""
        return self.expires - self.clock.monotonic()


class Handler:
    """Base class: ``prepare`` does the work; ``recover`` does it again in phase recover."""

    kind = "handler"

    def __init__(self, name: str, timeout: float, on_receipt: bool = False) -> None:
        self.name = name
        self.timeout = timeout
        self.on_receipt = on_receipt

    async def prepare(self, ctx: HandlerContext) -> str:
        """Act before the event; return a short detail for the log."""
        raise NotImplementedError

    async def recover(self, ctx: HandlerContext) -> str:
        """Act after the event left the document (default: ``prepare`` in phase recover)."""
        return await self.prepare(ctx)

    async def run(self, ctx: HandlerContext) -> str:
        """The phase ``ctx`` names."""
        if ctx.phase == "recover":
            return await self.recover(ctx)
        return await self.prepare(ctx)

    def __repr__(self) -> str:
        return f"<{self.kind} handler {self.name!r}>"
