"""The follower's role in a scaled-out fleet: it writes nothing, the leader does.

A fabric that follows changes only by ``replicate`` (the leader's durable changes) or
``reload``, fires no timer, and sends a VM's approvals and requests to the leader through
a ``Relay`` (``relay.py``); the leader applies them (``Fabric.approve_relayed`` and
``Fabric.note_relayed_requests``). The ``Fabric`` holds a ``Follower`` while it follows,
none while it leads.
"""

from __future__ import annotations

from collections.abc import Sequence

from forewarn.fabric.config import FabricConfig
from forewarn.fabric.relay import Relay
from forewarn.fleet.topology import VM

__all__ = ["Follower"]


class Follower:
    """What a following fabric does with what VMs ask of it: relays it to the leader."""

    __slots__ = ("_always", "_persist_every", "_relayed_at", "relay")

    def __init__(self, relay: Relay, config: FabricConfig) -> None:
        self.relay = relay
        self._always = config.enablement == "always"
        self._persist_every = config.last_request_persist_seconds
        self._relayed_at: dict[str, float] = {}

    def quiet(self, scope_id: str, now: float) -> bool:
        """True when a request of a recently asked scope at ``now`` need not be relayed:
        one was, within the persist interval (``note_request`` would relay nothing)."""
        last = self._relayed_at.get(scope_id)
        return last is not None and now - last < self._persist_every

    def note_request(self, vm: VM, now: float, recent: bool) -> bool:
        """A VM's request (``recent``: its scope had one within the idle window): tell the
        leader at most once per persist interval per scope, and at once when this request
        enables the scope. True when it does."""
        was_enabled = recent or self._always
        if was_enabled and self.quiet(vm.scope_id, now):
            return False
        self._relayed_at[vm.scope_id] = now
        self.relay.note_request(vm.scope_id, vm.name, now)
        return not was_enabled

    def approve(self, vm_name: str, event_ids: Sequence[str], at: float) -> None:
        """Send a VM's approval, made at ``at``, to the leader (answered once it is
        recorded)."""
        self.relay.approve(vm_name, event_ids, at)

    async def settled(self) -> None:
        """Wait until every approval relayed so far is durably recorded."""
        await self.relay.settled()

    def pending(self) -> int:
        """Relayed approvals not yet recorded."""
        return self.relay.pending()
