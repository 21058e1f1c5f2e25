"""What readers get of a scope: an immutable view, swapped whole when a change is durable."""

from __future__ import annotations

from dataclasses import dataclass

from forewarn.contract import RenderableEvent
from forewarn.fleet.topology import Scope

__all__ = ["ScopeView"]


@dataclass(frozen=True, slots=True)
class ScopeView:
    """What a scope's VMs see: its incarnation and its events in creation order."""

    scope: Scope
    incarnation: int
    events: tuple[RenderableEvent, ...]

    def events_for(self, vm_name: str) -> tuple[RenderableEvent, ...]:
        """The events ``vm_name`` sees (all of them, except in per-VM-visibility scopes)."""
        if not self.scope.policy.per_vm_visibility:
            return self.events
        return tuple(e for e in self.events if vm_name in e.resources)
