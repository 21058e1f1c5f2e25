"""The composition root: clock → store → fabric → apps, wired from a ``ServeConfig``.

What listens is ``listeners``; what serves until a signal is ``serving``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

import structlog
from prometheus_client import CollectorRegistry
from starlette.middleware import Middleware

from forewarn.control import ControlApp
from forewarn.control.dashboard import ScenarioHook
from forewarn.eventgrid import ArmNames, EventGrid, Ledger
from forewarn.eventgrid.destinations import Destinations
from forewarn.eventgrid.hub import SubscriptionKeeper
from forewarn.fabric import (
    Changes,
    Clock,
    Fabric,
    FabricConfig,
    HistoryEntry,
    InlineJournal,
    Journal,
    Store,
)
from forewarn.fleet import (
    FleetError,
    FleetSpec,
    Topology,
    build_topology,
    demo_fleet,
    fleet_from_builtins,
    fleet_to_builtins,
    load_fleet_file,
)
from forewarn.imds import Endpoint, EndpointMetrics, ImdsSettings
from forewarn.imds.recorder import DocumentRecorder
from forewarn.imds.tokens import TokenSigner
from forewarn.rehearsal import ReactionStore, ReactionTracker, track_reactions
from forewarn.server.config import ServeConfig
from forewarn.store import SQLiteStore, StoreError, ThreadedJournal, yield_to_the_loop
from forewarn.store.marker import refuse_missing

if TYPE_CHECKING:
    from forewarn.server.cluster.leadership import Cluster

__all__ = [
    "Prepared",
    "Runtime",
    "ServerStore",
    "build_runtime",
    "choose_fleet",
    "prepare",
    "remembered",
]

log = structlog.get_logger("forewarn")


class ServerStore(Store, ReactionStore, SubscriptionKeeper, Protocol):
    """A store as a server uses it: the fabric's, the rehearsal's, Event Grid's
    subscriptions, remembered settings."""

    def stored_settings(self) -> dict[str, Any]: ...

    def save_settings(self, settings: dict[str, Any]) -> None: ...


@dataclass
class Runtime:
    """Everything one server process holds; tests build their own.

    ``cluster`` is set when the state is shared in PostgreSQL (``--store``): the process
    then follows, or leads, the other processes serving the same fleet."""

    config: ServeConfig
    clock: Clock
    store: ServerStore
    topology: Topology
    fabric: Fabric
    endpoint: Endpoint
    control: ControlApp
    registry: CollectorRegistry
    cluster: Cluster | None = None
    recorder: DocumentRecorder | None = None
    reactions: ReactionTracker | None = None
    eventgrid: EventGrid | None = None
    #: The fleet file the server was built from (ARM's subscription and resource group).
    spec: FleetSpec | None = None

    def close(self) -> None:
        """Write what is queued, then release the database."""
        if self.recorder is not None:
            self.recorder.close()
        self.fabric.close()
        self.store.close()


@dataclass
class Prepared:
    """What a server needs before it may create anything: its fleet and, when the
    database exists already, that database (opened, checked and locked)."""

    spec: FleetSpec
    topology: Topology
    store: ServerStore | None

    def close(self) -> None:
        """Release the database, if one was opened."""
        if self.store is not None:
            self.store.close()


def prepare(config: ServeConfig) -> Prepared:
    """Load and check the fleet and an existing database; creates no file.

    ``forewarn serve`` binds its listeners after this and before ``build_runtime``, so a
    port that is taken leaves no new database behind.
    """
    given = load_fleet_file(config.fleet) if config.fleet is not None else None
    given_topology = build_topology(given) if given is not None else None
    store: ServerStore | None = None
    if config.store is not None:
        store = _open_postgres(config.store)  # shared: its tables are made once, by anyone
    elif config.db == ":memory:" or os.path.exists(config.db):
        store = SQLiteStore(config.db, new_db=config.new_db)
    else:  # a database that was here and is gone is not silently made anew
        refuse_missing(config.db, new_db=config.new_db)
    try:
        stored = store.stored_fleet() if store is not None else None
        spec = choose_fleet(given, stored, config.where)
        topology = given_topology if given_topology is not None else build_topology(spec)
    except Exception:
        if store is not None:
            store.close()
        raise
    return Prepared(spec, topology, store)


def choose_fleet(given: FleetSpec | None, stored: dict[str, Any] | None, db: str) -> FleetSpec:
    """``--fleet`` if given, else the fleet stored in the database, else the demo fleet.

    A database keeps the fleet it was created with; serving it a different fleet would
    orphan its events, so that is refused.
    """
    if given is not None:
        if stored is not None and stored != fleet_to_builtins(given):
            raise FleetError(
                f"database {db} was created with a different fleet; "
                "use another --db (or delete it) to serve this fleet"
            )
        return given
    if stored is not None:
        return fleet_from_builtins(stored, origin=f"fleet stored in {db}")
    return demo_fleet()


def _open_postgres(url: str) -> ServerStore:
    from forewarn.store.postgres import PostgresStore  # psycopg is loaded only when used

    return PostgresStore(url)


def remembered(config: ServeConfig, stored: dict[str, Any]) -> ServeConfig:
    """The clock kind and time scale: the flags' when given, else what the database
    remembers, else the defaults. Changing the clock kind of a database is allowed (with
    a warning): a virtual clock's position would not mean anything to a real one. In a
    scaled-out fleet (``--store``) every process must run the same clock: a process
    started with other settings than the fleet's is refused."""
    if config.store is not None:
        for key, given in (("clock", config.clock), ("time_scale", config.time_scale)):
            kept = stored.get(key)
            if given is not None and kept is not None and given != kept:
                flag = "--" + key.replace("_", "-")
                raise StoreError(
                    f"the fleet in {config.where} runs with {flag} {kept}; start every "
                    f"process with the same {flag} (or without it)"
                )
    clock = config.clock or stored.get("clock") or "real"
    scale = config.time_scale or stored.get("time_scale") or 1.0
    if config.clock and stored.get("clock") and config.clock != stored["clock"]:
        log.warning(
            "clock kind changed",
            db=config.db,
            was=stored["clock"],
            now=config.clock,
        )
    return replace(config, clock=clock, time_scale=float(scale))


def build_runtime(
    config: ServeConfig,
    *,
    clock: Clock | None = None,
    prepared: Prepared | None = None,
    threaded: bool = True,
    scenarios: Callable[[str | None], ScenarioHook] | None = None,
) -> Runtime:
    """Wire a server from its configuration (without opening any listener).

    ``threaded``: changes are written by a writer thread with group commit, reported on
    the event loop that makes the first change (what ``forewarn serve`` runs); otherwise
    at once, on the caller's thread. ``scenarios(token)`` makes the dashboard's scenario
    player (the CLI gives one: the scenario engine sits beside this layer).
    """
    prepared = prepared or prepare(config)
    store = prepared.store or SQLiteStore(config.db, new_db=config.new_db)
    clustered = config.store is not None
    try:
        config = remembered(config, store.stored_settings())
        store.save_fleet(fleet_to_builtins(prepared.spec))
        store.save_settings({"clock": config.clock, "time_scale": config.time_scale})
        if clock is None and config.clock == "virtual":
            clock = Clock.virtual(start=store.clock_position())
            store.save_clock_position(clock.now())  # virtual time resumes here after a restart
        elif clock is None:
            clock = Clock.real()
    except Exception:
        store.close()
        raise
    topology = prepared.topology
    journal: Journal = (
        ThreadedJournal(store, on_written=_log_written)
        if threaded and not clustered  # a scaled-out process writes only once it leads
        else InlineJournal(store, on_written=_log_written)
    )
    fabric = Fabric(
        topology,
        store,
        clock,
        FabricConfig(time_scale=config.time_scale or 1.0, enablement=config.enablement),
        journal=journal,
    )
    # who saw what when (the rehearsal report), written on a thread below the loop's
    # (the fleet's live events noted again at once: one acknowledged just before a crash)
    reactions = track_reactions(fabric, store, thread_setup=yield_to_the_loop)
    eventgrid = _eventgrid(fabric, prepared.spec, config, store)  # Event Grid, Resource Graph
    registry = CollectorRegistry()
    metrics = EndpointMetrics(registry)
    recorder = DocumentRecorder(config.record, clock.now) if config.record else None
    endpoint = Endpoint(
        fabric,
        ImdsSettings(
            rate_limit=config.rate_limit or None,
            first_call_delay=config.first_call_delay,
            header_timeout=config.imds_header_timeout,
            body_timeout=config.imds_body_timeout,
            max_connections_per_address=config.imds_max_connections_per_address,
        ),
        on_response=metrics.observe,
        recorder=recorder,
        reactions=reactions,
        tokens=TokenSigner.for_fleet(config.arm_token, topology.azure.subscription),
    )
    cluster = _cluster(fabric, store, clock, registry, eventgrid) if clustered else None
    forwarding = [] if cluster is None else [Middleware(_forwarding(), cluster=cluster)]
    control = ControlApp(
        fabric,
        registry=registry,
        token=config.control_token,
        hosts=config.control_hosts,
        middleware=forwarding,
        scenarios=None if scenarios is None else scenarios(config.control_token),
        reactions=reactions,
        faults=endpoint.faults,
        eventgrid=eventgrid,
    )
    return Runtime(
        config, clock, store, topology, fabric, endpoint, control, registry, cluster, recorder,
        reactions, eventgrid, prepared.spec,
    )  # fmt: skip


def _eventgrid(
    fabric: Fabric, spec: FleetSpec, config: ServeConfig, keeper: SubscriptionKeeper
) -> EventGrid:
    """Scheduled Events published outside the VM: a ledger told by the fabric, and the
    Event Grid hub delivering it (the ARM listener adds Resource Graph and the policy),
    to subscriptions kept in the store (``resume`` starts them again after a restart)."""
    names = ArmNames(fabric.topology)  # the names the endpoint and ARM give the fleet too
    ledger = Ledger(
        names,
        fabric.clock.now,
        # the scope's durable policy (the fleet file's event_grid, or what ARM set since)
        lambda scope_id: fabric.policy(scope_id).event_grid_and_resource_graph,
    )
    fabric.observe(ledger)
    fabric.owe(ledger)  # its notices are written with the change that makes them
    return EventGrid(
        ledger,
        time_scale=config.time_scale or 1.0,
        leading=lambda: fabric.leading,
        history=fabric.note,
        keeper=keeper,
        destinations=Destinations(config.eventgrid_allow),
    )


def _cluster(
    fabric: Fabric,
    store: ServerStore,
    clock: Clock,
    registry: CollectorRegistry,
    eventgrid: EventGrid,
) -> Cluster:
    """This process's part in a scaled-out fleet (a follower until elected; on taking
    the lead it reads the Event Grid subscriptions again, as the leader before it left
    them, and queues the notices they had yet to deliver)."""
    from forewarn.server.cluster.leadership import Cluster
    from forewarn.server.cluster.metrics import ClusterMetrics
    from forewarn.store.postgres import PostgresStore

    assert isinstance(store, PostgresStore)
    return Cluster(
        fabric,
        store,
        clock,
        control_url=None,
        metrics=ClusterMetrics(registry),
        on_written=_log_written,
        on_lead=functools.partial(eventgrid.resume, queued=True),
    )


def _forwarding() -> Any:
    from forewarn.server.cluster.forwarding import LeaderForwarding

    return LeaderForwarding


def _log_written(written: Sequence[Changes]) -> None:
    """Every durable transition as one structured log line (on the writer's thread)."""
    for changes in written:
        _log_history(changes.history)


def _log_history(entries: list[HistoryEntry]) -> None:
    for entry in entries:
        ids = {"scope": entry.scope_id, "operation_id": entry.operation_id,
               "event_id": entry.event_id}  # fmt: skip
        fields = {k: v for k, v in {**ids, **entry.detail}.items() if v not in (None, [], {})}
        log.info(entry.kind, **fields)
