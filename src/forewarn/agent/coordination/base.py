"""The coordination backend's contract: each listed VM's agent votes ready or not ready.

Votes live under the event's id in a shared store (Redis or PostgreSQL) and expire after
``ttl`` seconds. ``record`` returns every vote of the event *including its own, read
atomically with the write*, so the agent whose vote completes the group is guaranteed to
see it complete.

Who approves is not read from the votes but *claimed*: ``claim`` is one atomic step in
the backend (Redis ``SET NX`` in a script, a PostgreSQL upsert that only a free or expired
row accepts), so exactly one agent of the group posts the approval. A claim is a lease:
a holder that dies before it settles frees it when the lease runs out. ``settle`` marks it
done just before the POST, after which nobody else claims it: a done claim lasts ``ttl``,
and ``forget`` (the event left one agent's document) drops the votes only, since another
agent of the group may still be about to claim (it read the complete group a moment ago,
and its document still shows the event).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["Claim", "CoordinationError", "Coordinator", "Vote"]


class CoordinationError(Exception):
    """The shared backend could not be reached or refused a command."""


@dataclass(frozen=True, slots=True)
class Vote:
    """One VM's word on an event."""

    vm: str
    ready: bool
    reason: str
    at: float


@dataclass(frozen=True, slots=True)
class Claim:
    """Who holds the right to approve an event: ``ours`` when the asking VM does."""

    holder: str
    done: bool
    ours: bool


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

    async def claim(self, event_id: str, vm: str, lease: float) -> Claim:
        """Take (or renew) the approval of ``event_id`` for ``lease`` seconds, atomically."""
        ...

    async def settle(self, event_id: str, vm: str) -> bool:
        """Mark ``vm``'s claim done for good (it posts now); False if it no longer holds it."""
        ...

    async def forget(self, event_id: str) -> None:
        """Drop the event's votes (it left the document); its claim stays until it expires."""
        ...

    async def close(self) -> None: ...
