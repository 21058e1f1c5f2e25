"""A fabric that follows the leader of a scaled-out fleet.

In a scaled-out fleet only the leader's fabric writes. Every other one ``follow``s: it
changes only by ``replicate`` (the leader's durable changes) or ``reload``, fires no timer,
and sends a VM's approvals and requests through a ``Relay`` (``relay.py``); the leader
applies them with ``approve_relayed`` and ``note_relayed_request``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import msgspec

from forewarn.fabric.journal import Journal
from forewarn.fabric.ports import FabricObserver
from forewarn.fabric.records import Changes, EventRecord, ScopeState, Snapshot
from forewarn.fabric.relay import Relay
from forewarn.fabric.state import FabricState
from forewarn.fabric.transitions import TransitionRules, Tx
from forewarn.fleet.topology import VM

__all__ = ["Following"]


class Following(TransitionRules):
    """Leading and following (a base of ``Fabric``, which provides the attributes)."""

    replicated: bool
    _observers: list[FabricObserver]
    _seen: FabricState
    _relayed_at: dict[str, float]
    _reload_listeners: list[Callable[[], None]]
    _persist_every: float

    if TYPE_CHECKING:

        def catch_up(self) -> None: ...


    @property
    def leading(self) -> bool:
        """False while this process follows another one's changes."""
        return self._relay is None

    def follow(self, relay: Relay) -> None:
        """Stop writing: from now on the state moves only by ``replicate``/``reload``,
        and a VM's approvals and requests go to the leader through ``relay``."""
        self._relay = relay
        self.replicated = True

    def lead(
        self, snapshot: Snapshot, journal: Journal, *, clock_position: float | None = None
    ) -> None:
        """Become the writer: start over from ``snapshot`` (the database as the previous
        leader left it), then write through ``journal``."""
        self.reload(snapshot, clock_position=clock_position)
        self._pipe.use_journal(journal)
        self._relay = None
        self._relayed_at.clear()

    def reload(self, snapshot: Snapshot, *, clock_position: float | None = None) -> None:
        """Replace the whole state by ``snapshot`` (a follower that missed changes); a
        virtual clock moves on to ``clock_position`` (where the leader's stood)."""
        self._follow_clock(clock_position)
        self._pipe.reload(snapshot)
        self._work = self._pipe.work
        self._seen = self._pipe.published
        for state in self._work.scopes.values():
            self._remember_request(state)
        for observer in self._observers:
            observer.reloaded(self._seen.events.values())
        for listener in list(self._reload_listeners):
            listener()

    def replicate(self, batch: Sequence[Changes]) -> None:
        """Apply changes the leader made durable, in order (a virtual clock follows the
        leader's: it jumps to each position a change carries)."""
        self._pipe.replicate(batch)
        for changes in batch:
            for state in changes.scopes:
                self._remember_request(state)
            self._follow_clock(changes.clock_position)

    def _follow_clock(self, position: float | None) -> None:
        if position is not None and self.clock.is_virtual and position > self.clock.now():
            self.clock.jump(position - self.clock.now())

    def _remember_request(self, state: ScopeState) -> None:
        at = state.last_request_at
        if at is not None and at > self._last_seen.get(state.scope_id, -1.0):
            self._last_seen[state.scope_id] = at

    def _relay_request(self, vm: VM, now: float, recent: bool) -> bool:
        """A follower's ``note_request``: tell the leader at most once per persist
        interval per scope (and at once when this request enables the scope)."""
        assert self._relay is not None
        was_enabled = recent or self.config.enablement == "always"
        last = self._relayed_at.get(vm.scope_id)
        if was_enabled and last is not None and now - last < self._persist_every:
            return False
        self._relayed_at[vm.scope_id] = now
        self._relay.note_request(vm.scope_id, vm.name, now)
        return not was_enabled

    def approve_relayed(self, vm_name: str, event_ids: Iterable[str]) -> list[EventRecord]:
        """Apply an approval a follower recorded: events already approved, started or
        gone are skipped (applying a request twice changes nothing)."""
        self.catch_up()
        vm = self.topology.vms.get(vm_name)
        if vm is None:
            return []
        live = [
            i for i in event_ids
            if (e := self._work.events.get(i)) is not None
            and e.scope_id == vm.scope_id
            and (not self.topology.scopes[e.scope_id].policy.per_vm_visibility
                 or vm_name in e.resources)
        ]  # fmt: skip
        return self._approve(live, by=vm_name) if live else []

    def note_relayed_request(self, scope_id: str, vm_name: str, at: float) -> None:
        """Merge a follower's last request of a scope (enabling the scope if it was off)."""
        if scope_id not in self._work.scopes:
            return
        last = self._last_seen.get(scope_id)
        enabled = self.config.enablement == "always" or (
            last is not None and at - last < self._idle_window
        )
        if last is None or at > last:
            self._last_seen[scope_id] = at
        persisted = self._work.scopes[scope_id].last_request_at
        if persisted is not None and at <= persisted:
            return
        if enabled and persisted is not None and at - persisted < self._persist_every:
            return
        tx = Tx(self.clock.now())
        tx.scopes[scope_id] = msgspec.structs.replace(
            self._work.scopes[scope_id], last_request_at=at
        )
        if not enabled:
            tx.log("scope.enabled", scope_id=scope_id, detail={"vm": vm_name})
        self._commit(tx, bookkeeping=True)
