"""The store interface the fabric writes through (implemented in ``forewarn.store``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from forewarn.fabric.reactions import ReactionData, VmPolls
from forewarn.fabric.records import Changes, HistoryEntry, Snapshot

__all__ = ["Store"]


class Store(Protocol):
    """Durable state: every change is written atomically before it becomes visible."""

    def load(self) -> Snapshot:
        """Everything needed to resume: live operations, events, rollouts, counters."""
        ...

    def apply(self, changes: Changes) -> None:
        """Write ``changes`` atomically (all or nothing), appending their history.

        Raises ``StoreUnavailable`` when they could not be written (nothing was). An
        empty ``Changes`` is a probe: a harmless write that fails the same way."""
        ...

    def apply_all(self, batch: Sequence[Changes]) -> None:
        """Write several changes, in order, in one transaction (group commit)."""
        ...

    def history(
        self,
        *,
        after: int = 0,
        limit: int = 1000,
        event_id: str | None = None,
        operation_id: str | None = None,
        newest: bool = False,
    ) -> list[HistoryEntry]:
        """History entries with ``seq > after``, oldest first; ``newest``: the last
        ``limit`` of them (still oldest first)."""
        ...

    def stored_fleet(self) -> dict[str, Any] | None:
        """The fleet this database was created with, if any."""
        ...

    def save_fleet(self, fleet: dict[str, Any]) -> None:
        """Remember the fleet this database serves."""
        ...

    def clock_position(self) -> float | None:
        """Where a virtual clock stood when last advanced (it must never go back)."""
        ...

    def save_clock_position(self, position: float) -> None:
        """Remember a virtual clock's position."""
        ...

    def save_reactions(self, data: ReactionData) -> None:
        """Merge reaction facts into what is stored: an event keeps the first value known
        of each field, a VM its earliest sighting and approval and its latest poll (each
        front-end of a scaled-out fleet writes what it saw). Raises ``StoreUnavailable``."""
        ...

    def reactions(self, since: float | None = None) -> ReactionData:
        """Events created at or after ``since`` (every one: None), the reactions to them,
        and every VM's polls."""
        ...

    def polls(self) -> list[VmPolls]:
        """Every VM's first and last poll, as merged from every front-end."""
        ...

    def close(self) -> None:
        """Release the database."""
        ...
