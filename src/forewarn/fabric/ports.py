"""What the fabric talks through: the store it writes (implemented in ``forewarn.store``),
the observers it tells what happened (the rehearsal's reaction tracker is one), and the
owers that say what a change owes to the world outside (Event Grid's ledger)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from forewarn.fabric.records import Changes, EventRecord, HistoryEntry, OutboxEntry, Snapshot

__all__ = ["FabricObserver", "Owing", "Store"]


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
        kind: str | None = None,
        newest: bool = False,
    ) -> list[HistoryEntry]:
        """History entries with ``seq > after`` (of one event, operation or ``kind``),
        oldest first; ``newest``: the last ``limit`` of them (still oldest first)."""
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

    def close(self) -> None:
        """Release the database."""
        ...


class FabricObserver(Protocol):
    """Told what happens in a fabric, as it happens (``Fabric.observe``), on the thread
    that made it happen. Each call must be cheap: it sits on the path of the change."""

    def published(self, changes: Changes) -> None:
        """A change became durable and visible."""
        ...

    def reloaded(self, events: Iterable[EventRecord]) -> None:
        """The whole state was replaced; ``events`` are the live events now."""
        ...

    def approved(self, vm: str, event_ids: Sequence[str]) -> None:
        """``vm`` approved ``event_ids`` (each visible to it), before the change is made."""
        ...

    def closing(self) -> None:
        """The fabric is closing: write what is held."""
        ...


class Owing(Protocol):
    """Says what a change owes outside the fabric (``Fabric.owe``), as the change is
    built: the messages go into its ``outbox`` and are written in its transaction, so a
    change is never durable without them (nor they without it). Called on the thread
    that makes the change, for every change this process writes (a follower's replicated
    changes carry the leader's); it must be cheap and must not fail."""

    def owed(self, changes: Changes, live: Mapping[str, EventRecord]) -> Sequence[OutboxEntry]:
        """The messages ``changes`` owes; ``live``: the live events before it."""
        ...
