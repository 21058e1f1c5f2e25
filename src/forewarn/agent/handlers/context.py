"""What a handler is told about the event it handles (``HandlerContext``).

A module of its own, loaded when a handler first runs: an agent that has run none holds
neither it nor the dataclasses module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from forewarn.agent.clock import AgentClock
from forewarn.agent.events import EventView, wire_event

__all__ = ["HandlerContext", "Phase"]

Phase = str  # "prepare" or "recover"


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
