"""What each VM's document showed over a run, as the engine observed it.

Documents are taken through the control API (``GET /api/v1/documents/{vm}``, which does
not count as a VM's request), once per scope whenever its live events change: every VM of
a scope gets the same document (a GPU scope with per-VM visibility is taken per VM). On a
virtual clock the engine observes after every transition, so nothing is missed; on a real
clock it polls (a state shorter than the poll interval can be missed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from forewarn.controlapi import ControlClient, ControlRefused
from forewarn.scenarios.fleetview import FleetView

__all__ = ["Observer", "SeenEvent", "Snapshot", "Timeline"]


@dataclass(frozen=True, slots=True)
class SeenEvent:
    """An event as a document showed it."""

    id: str
    type: str
    status: str
    resources: tuple[str, ...]
    not_before: str
    duration: int | None

    @property
    def state(self) -> str:
        """``Freeze Scheduled``, ``Reboot Started``, …"""
        return f"{self.type} {self.status}"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A document as first observed at ``t`` (the server's clock)."""

    t: float
    incarnation: int
    events: tuple[SeenEvent, ...]


def _snapshot(t: float, document: dict[str, Any]) -> Snapshot:
    events = tuple(
        SeenEvent(
            id=e["EventId"],
            type=e["EventType"],
            status=e["EventStatus"],
            resources=tuple(e.get("Resources") or ()),
            not_before=e.get("NotBefore", ""),
            duration=e.get("DurationInSeconds"),
        )
        for e in document.get("Events") or ()
    )
    return Snapshot(t, int(document["DocumentIncarnation"]), events)


@dataclass
class Timeline:
    """Documents over time by scope (``scope/vm`` for per-VM visibility), and deletions."""

    fleet: FleetView
    documents: dict[str, list[Snapshot]] = field(default_factory=dict)
    deleted: dict[str, float] = field(default_factory=dict)

    def _key(self, vm: str) -> str:
        scope = self.fleet.scope_of(vm)
        return f"{scope.id}/{vm}" if scope.per_vm_visibility else scope.id

    def add(self, key: str, snapshot: Snapshot) -> bool:
        """Keep ``snapshot`` if it is a new document of ``key``; True when it was."""
        seen = self.documents.setdefault(key, [])
        if seen and seen[-1].incarnation == snapshot.incarnation:
            return False
        seen.append(snapshot)
        return True

    def of(self, vm: str) -> list[Snapshot]:
        """The documents ``vm`` would have got, in order, until it was deleted."""
        gone = self.deleted.get(vm)
        return [s for s in self.documents.get(self._key(vm), []) if gone is None or s.t < gone]

    def states(self, vm: str, event_ids: frozenset[str] | None = None) -> list[str]:
        """What ``vm`` saw of the events listing it (``event_ids``: only those), as event
        states in order, each once while it lasted: ``[Freeze Scheduled, Freeze Started]``."""
        out: list[str] = []
        last: tuple[str, ...] = ()
        for snapshot in self.of(vm):
            now = tuple(
                e.state
                for e in snapshot.events
                if any(r.lstrip("_").lower() == vm.lower() for r in e.resources)
                and (event_ids is None or e.id.upper() in event_ids)
            )
            out.extend(state for state in now if state not in last)
            last = now
        return out


class Observer:
    """Keeps a ``Timeline`` current: call ``observe(now)`` after anything may have changed."""

    def __init__(self, control: ControlClient, fleet: FleetView) -> None:
        self.control = control
        self.timeline = Timeline(fleet)
        self._signatures: dict[str, tuple[Any, ...]] = {}
        self._live_events: set[str] = set()

    def start(self, now: float) -> None:
        """The first document of every scope (per-VM scopes: nothing yet)."""
        for scope in self.timeline.fleet.scopes.values():
            if not scope.per_vm_visibility:
                self._take(scope.id, list(scope.vms), now)

    def observe(self, now: float) -> bool:
        """Take the documents of scopes whose live events changed; True if any did."""
        events = self.control.events()
        by_scope: dict[str, list[tuple[Any, ...]]] = {}
        for e in events:
            by_scope.setdefault(e["scope"], []).append(
                (e["id"], e["status"], tuple(e["resources"]), e["not_before"])
            )
        changed = False
        for scope_id in set(by_scope) | set(self._signatures):
            signature = tuple(sorted(by_scope.get(scope_id, [])))
            if self._signatures.get(scope_id) == signature:
                continue
            self._signatures[scope_id] = signature
            changed = True
            scope = self.timeline.fleet.scopes[scope_id]
            if scope.per_vm_visibility:
                for vm in sorted({r for e in signature for r in e[2]} | self._listed(scope_id)):
                    self._take(f"{scope_id}/{vm}", [vm], now)
            else:
                self._take(scope_id, list(scope.vms), now)
        ids = {e["id"] for e in events}
        if self._live_events - ids:  # an event ended: a Preempt or Terminate may delete VMs
            self._note_deletions(now)
        self._live_events = ids
        return changed

    def _listed(self, scope_id: str) -> set[str]:
        prefix = scope_id + "/"
        return {k[len(prefix) :] for k in self.timeline.documents if k.startswith(prefix)}

    def _take(self, key: str, vms: list[str], now: float) -> None:
        for vm in vms:
            if vm in self.timeline.deleted:
                continue
            document = self._document(vm)
            if document is None:
                self.timeline.deleted.setdefault(vm, now)
                continue
            self.timeline.add(key, _snapshot(now, document))
            return

    def _document(self, vm: str) -> dict[str, Any] | None:
        """The document ``vm`` gets now, or None once it is deleted (404)."""
        try:
            return self.control.document(vm)
        except ControlRefused as exc:
            if exc.status == 404:
                return None
            raise

    def _note_deletions(self, now: float) -> None:
        for vm in self.control.vms():
            if vm["status"] == "deleted":
                self.timeline.deleted.setdefault(vm["name"], now)
