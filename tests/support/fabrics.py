"""A fabric in process for tests: ``make_fabric`` (the one builder) and the observers
shared by the fabric, store, control, rehearsal and endpoint tests.

Everything here reads the fabric through its public surface only (views, live events,
operations, history, ``is_deleted``), so the tests assert what a client or an operator
could observe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from forewarn.contract import EventStatus, RenderableEvent
from forewarn.fabric import (
    Clock,
    EventRecord,
    Fabric,
    FabricConfig,
    OperationRecord,
    OperationRequest,
    Store,
)
from forewarn.fleet import FleetSpec, build_topology, demo_fleet, fleet_from_builtins
from forewarn.store import SQLiteStore

T0 = 1_700_000_000.0
MINUTE = 60.0
HOUR = 3600.0
DAY = 24 * HOUR

#: The demo fleet's VMs, in fleet order, with (scope, host, update domain).
DEMO_LAYOUT = {
    "web-0": ("web", "host-1", 0),
    "web-1": ("web", "host-2", 1),
    "web-2": ("web", "host-3", 2),
    "web-3": ("web", "host-4", 0),
    "web-4": ("web", "host-2", 1),
    "web-5": ("web", "host-3", 2),
    "workers_0": ("workers", "host-4", 0),
    "workers_1": ("workers", "host-1", 1),
    "workers_2": ("workers", "host-2", 0),
    "workers_3": ("workers", "host-3", 1),
    "jumpbox": ("jumpbox", "host-4", 0),
    "FrontEnd_IN_0": ("shop", "host-1", 0),
    "FrontEnd_IN_1": ("shop", "host-2", 1),
    "BackEnd_IN_0": ("shop", "host-3", 0),
}


def fleet(*scopes: Mapping[str, Any], **top: Any) -> FleetSpec:
    """A fleet spec from plain scope dicts (validated like a fleet file)."""
    return fleet_from_builtins({"scopes": [dict(s) for s in scopes], **top})


def make_fabric(
    spec: FleetSpec | None = None,
    *,
    clock: Clock | None = None,
    store: Store | None = None,
    db: str | Path = ":memory:",
    new_id: Callable[[], str] | None = None,
    new_token: Callable[[], str] | None = None,
    **config: Any,
) -> Fabric:
    """A fabric over ``spec`` (the demo fleet by default) on a frozen virtual clock at T0,
    over ``store`` (a new SQLite store at ``db`` by default), ``FabricConfig(**config)``.

    Every scope's Scheduled Events are on unless ``enablement="on-first-request"`` (the
    faithful rule) is passed: most tests ask for documents without enabling first.
    """
    config.setdefault("enablement", "always")
    extra: dict[str, Any] = {} if new_id is None else {"new_id": new_id}
    if new_token is not None:
        extra["new_token"] = new_token
    return Fabric(
        build_topology(spec or demo_fleet()),
        store if store is not None else SQLiteStore(db),
        clock or Clock.virtual(start=T0),
        FabricConfig(**config),
        **extra,
    )


def submit(fabric: Fabric, kind: str, *vms: str, **fields: Any) -> OperationRecord:
    """Submit ``kind`` against ``vms`` (or a host/scope passed as keyword)."""
    return fabric.submit(OperationRequest(kind=kind, vms=tuple(vms), **fields))


def live(fabric: Fabric, op: OperationRecord) -> list[EventRecord]:
    """The live events of an operation, in creation order."""
    return [e for e in fabric.events() if e.operation_id == op.id]


def only_event(fabric: Fabric, op: OperationRecord) -> EventRecord:
    """The single live event of ``op``."""
    events = live(fabric, op)
    assert len(events) == 1, events
    return events[0]


def rendered(fabric: Fabric, event_id: str) -> RenderableEvent | None:
    """The event as its scope's document shows it, or None once it has disappeared."""
    for scope_id in fabric.topology.scopes:
        for event in fabric.view(scope_id).events:
            if event.event_id == event_id:
                return event
    return None


def status(fabric: Fabric, event_id: str) -> EventStatus | None:
    """The wire status of an event, None once removed."""
    event = rendered(fabric, event_id)
    return None if event is None else event.status


def incarnations(fabric: Fabric) -> dict[str, int]:
    """Every scope's DocumentIncarnation."""
    return {sid: fabric.view(sid).incarnation for sid in fabric.topology.scopes}


def history_kinds(fabric: Fabric, **filters: Any) -> list[str]:
    """The kinds of the history entries, oldest first."""
    return [h.kind for h in fabric.history(limit=1_000_000, **filters)]


def observable(fabric: Fabric, *, history: bool = True) -> dict[str, Any]:
    """Everything visible about a fabric, for "nothing changed" and "same after restart"
    (``history=False`` leaves the history out, e.g. for two fabrics reading one table)."""
    seen: dict[str, Any] = {
        "views": {sid: fabric.view(sid) for sid in fabric.topology.scopes},
        "events": fabric.events(),
        "operations": fabric.operations(),
        "rollouts": fabric.rollouts(),
        "deleted": sorted(n for n in fabric.topology.vms if fabric.is_deleted(n)),
    }
    if history:
        seen["history"] = fabric.history(limit=1_000_000)
    return seen
