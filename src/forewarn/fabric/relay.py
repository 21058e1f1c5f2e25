"""How a follower's requests reach the leader of a scaled-out fleet.

Only one process (the leader) writes the platform's state; every other one serves from
views it replicates (``Fabric.replicate``). What a VM does on a follower that must change
state goes through a ``Relay``: an approval is validated against the follower's own view
(same rules and errors as on the leader), then recorded durably for the leader to apply;
a scope's requests (enablement, last request time) are passed on as bookkeeping.
``forewarn.server`` implements it over PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

__all__ = ["Relay"]


class Relay(Protocol):
    """A follower's way to the leader."""

    def approve(self, vm: str, event_ids: Sequence[str], at: float) -> None:
        """Record that ``vm`` approved ``event_ids`` (already validated) at ``at`` (the
        fleet's clock); ``settled`` tells when that record is durable."""
        ...

    def note_request(self, scope_id: str, vm: str, at: float) -> None:
        """Pass on that a VM of ``scope_id`` asked at ``at`` (best effort)."""
        ...

    def pending(self) -> int:
        """Approvals recorded but not durable yet."""
        ...

    async def settled(self) -> None:
        """Wait until every approval recorded so far is durable; raises
        ``StoreUnavailable`` if one could not be recorded."""
        ...
