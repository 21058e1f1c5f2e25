"""The coordination backend's contract: each listed VM's agent votes ready or not ready.

Votes live under the event's id in a shared store (Redis or PostgreSQL) and expire after
``ttl`` seconds. ``record`` returns every vote of the event *including its own, read
atomically with the write*, so the agent whose vote completes the group is guaranteed to
see it complete, and approves at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["CoordinationError", "Coordinator", "Vote"]


class CoordinationError(Exception):
    """The shared backend could not be reached or refused a command."""


@dataclass(frozen=True, slots=True)
class Vote:
    """One VM's word on an event."""

    vm: str
    ready: bool
    reason: str
    at: float


class Coordinator(Protocol):
    """A shared place where agents record readiness per event."""

    async def record(
        self, event_id: str, vm: str, ready: bool, reason: str, at: float
    ) -> dict[str, Vote]:
        """Store this VM's vote; return all votes of the event, this one included."""
        ...

    async def votes(self, event_id: str) -> dict[str, Vote]:
        """The event's current votes (expired ones left out)."""
        ...

    async def forget(self, event_id: str) -> None:
        """Drop the event's votes (it left the document)."""
        ...

    async def close(self) -> None: ...
