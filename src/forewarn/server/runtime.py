"""The composition root: clock → store → fabric → apps, and the listeners that serve them."""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import signal
import socket
import sys
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

import structlog
import uvicorn
from prometheus_client import CollectorRegistry
from starlette.middleware import Middleware

from forewarn.control import ControlApp
from forewarn.control.dashboard import ScenarioHook
from forewarn.fabric import (
    Changes,
    Clock,
    Fabric,
    FabricConfig,
    HistoryEntry,
    InlineJournal,
    Journal,
    Scheduler,
    Store,
    StoreUnavailable,
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
from forewarn.imds import Endpoint, EndpointMetrics, ImdsSettings, serve_endpoint
from forewarn.imds.recorder import DocumentRecorder
from forewarn.rehearsal import ReactionStore, ReactionTracker, track_reactions
from forewarn.server.config import ServeConfig, parse_bind
from forewarn.server.heap import HeapKeeper, freeze_startup_heap
from forewarn.store import SQLiteStore, StoreError, ThreadedJournal

if TYPE_CHECKING:
    from forewarn.server.cluster.leadership import Cluster

__all__ = [
    "Prepared",
    "Runtime",
    "bind_listeners",
    "build_runtime",
    "choose_fleet",
    "prepare",
    "run_server",
]

log = structlog.get_logger("forewarn")


class ServerStore(Store, ReactionStore, Protocol):
    """A store as a server uses it: the fabric's, the rehearsal's, remembered settings."""

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
        store = SQLiteStore(config.db)
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
    store = prepared.store or SQLiteStore(config.db)
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
    reactions = track_reactions(fabric, store)  # who saw what when: the rehearsal report
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
    )
    cluster = _cluster(fabric, store, clock, registry) if clustered else None
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
    )
    return Runtime(
        config, clock, store, topology, fabric, endpoint, control, registry, cluster, recorder,
        reactions,
    )  # fmt: skip


def _cluster(
    fabric: Fabric, store: ServerStore, clock: Clock, registry: CollectorRegistry
) -> Cluster:
    """This process's part in a scaled-out fleet (a follower until elected)."""
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


class _QuietServer(uvicorn.Server):
    """A uvicorn server that leaves signal handling to ``run_server``."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def _listen(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A bound socket; ``reuse_port``: shared with the other workers (the kernel spreads
    connections over them)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio's own loop sets TCP_NODELAY on accepted connections only
    # then (uvloop always does); without it Nagle holds a reply's second write ~40 ms.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.set_inheritable(True)
    return sock


def _uvicorn(app: Any) -> _QuietServer:
    config = uvicorn.Config(
        app,
        http="httptools",
        lifespan="off",
        access_log=False,
        log_level="warning",
        server_header=False,
        timeout_keep_alive=75,
        backlog=4096,
    )
    return _QuietServer(config)


@dataclass
class Listeners:
    """The sockets a server serves, opened before anything is announced."""

    imds: list[socket.socket]
    vm_ports: dict[int, str]
    control: socket.socket
    #: A worker's own control listener (the others share ``control``): the address the
    #: leader is reached at, for forwarding.
    private_control: socket.socket | None = None

    def close(self) -> None:
        for sock in [*self.imds, self.control]:
            sock.close()
        if self.private_control is not None:
            self.private_control.close()

    def control_sockets(self) -> list[socket.socket]:
        """Every socket the control API serves."""
        extra = [] if self.private_control is None else [self.private_control]
        return [self.control, *extra]

    def control_url(self) -> str:
        """The URL at which this very process answers the control API."""
        return f"http://{_address(self.private_control or self.control)}"


def open_listeners(runtime: Runtime) -> Listeners:
    """Bind every socket (endpoint, per-VM ports, control); fail before serving if taken."""
    return bind_listeners(runtime.config, runtime.topology)


def bind_listeners(config: ServeConfig, topology: Topology) -> Listeners:
    """``open_listeners`` before any runtime exists (``forewarn serve`` binds first)."""
    imds: list[socket.socket] = []
    vm_ports: dict[int, str] = {}
    shared = config.workers > 1
    private = None
    try:
        for bind in config.imds_bind:
            imds.append(_listen(*parse_bind(bind), reuse_port=shared))
        if config.per_vm_ports:
            host = parse_bind(config.imds_bind[0])[0]
            taken = {parse_bind(b)[1] for b in (*config.imds_bind, config.control_bind)}
            for vm in topology.vms.values():
                if vm.port in taken:
                    raise OSError(f"VM {vm.name!r} wants port {vm.port}, which a listener uses")
                if vm.port is not None:
                    imds.append(_listen(host, vm.port, reuse_port=shared))
                    vm_ports[vm.port] = vm.name
        control_host, control_port = parse_bind(config.control_bind)
        if shared:
            private = _listen(control_host, 0)
        control = _listen(control_host, control_port, reuse_port=shared)
    except OSError:
        for sock in [*imds, *([private] if private is not None else [])]:
            sock.close()
        raise
    return Listeners(imds, vm_ports, control, private)


def _address(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def banner(runtime: Runtime, listeners: Listeners) -> Iterator[str]:
    """What ``forewarn serve`` prints on start: listeners, the default VM, a curl line."""
    endpoint = _address(listeners.imds[0])
    yield f"forewarn: metadata endpoint on http://{endpoint}"
    for sock in listeners.imds[1:]:
        port = sock.getsockname()[1]
        name = listeners.vm_ports.get(port)
        yield f"forewarn:   also http://{_address(sock)}" + (f" (VM {name})" if name else "")
    yield f"forewarn: control API on http://{_address(listeners.control)} (OpenAPI: /openapi.json)"
    fleet = runtime.topology
    vms = f"{len(fleet.vms)} VM" + ("" if len(fleet.vms) == 1 else "s")
    scopes = f"{len(fleet.scopes)} scope" + ("" if len(fleet.scopes) == 1 else "s")
    where = runtime.config.where
    yield (
        f"forewarn: {vms} in {scopes}; clock "
        f"{runtime.config.clock}, time scale {runtime.config.time_scale or 1:g}; "
        + (f"store {where} (shared: `forewarn status` shows who leads)"
           if runtime.cluster is not None else f"db {where}")
    )  # fmt: skip
    default = fleet.default_vm
    if default:
        vm = fleet.vms[default]
        yield f"forewarn: a plain request from 127.0.0.1 is VM {default!r} (scope {vm.scope_id})"
    other = next((v for v in fleet.vms.values() if v.name != default), None)
    yield (
        "forewarn: try  curl -s -H Metadata:true "
        f"'http://{endpoint}/metadata/scheduledevents?api-version=2020-07-01'"
    )
    if other is not None:
        yield (
            f"forewarn: as VM {other.name!r}:  curl -s --interface {other.address} "
            f"-H Metadata:true 'http://{endpoint}/metadata/scheduledevents?api-version=2020-07-01'"
        )


async def _serve(runtime: Runtime, listeners: Listeners, ready: Callable[[], None] | None) -> None:
    control_server = _uvicorn(runtime.control.asgi)
    cluster = runtime.cluster
    scheduler = Scheduler(runtime.fabric, runtime.clock) if cluster is None else None
    if cluster is not None:
        cluster.control_url = listeners.control_url()
        cluster.start()  # follows at once; leads (and schedules) once elected
    runtime.fabric.run_due()  # timers that came due while the server was down
    loop = asyncio.get_running_loop()
    done = asyncio.Event()

    def stop() -> None:
        control_server.should_exit = True
        runtime.control.close()  # open dashboard streams would hold the listener up
        done.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop)
    scheduler_task = (
        None
        if scheduler is None
        else asyncio.create_task(scheduler.run(), name="forewarn-scheduler")
    )
    reactions_task = (
        None
        if runtime.reactions is None
        else asyncio.create_task(  # writes who saw what, once a second at most
            runtime.reactions.run(), name="forewarn-reactions"
        )
    )
    endpoint_server = await serve_endpoint(runtime.endpoint, listeners.imds)
    heap_task = asyncio.create_task(  # freezes the fleet's connections once they are in
        HeapKeeper(lambda: endpoint_server.connections).run(), name="forewarn-heap"
    )
    control_task = asyncio.create_task(
        control_server.serve(sockets=listeners.control_sockets())
    )
    control_task.add_done_callback(lambda _: done.set())
    while not control_server.started and not control_task.done():
        await asyncio.sleep(0.01)
    if control_task.done():
        control_task.result()  # surfaces a failure to start
    if ready is not None:
        ready()
    log.info("serving", scopes=len(runtime.topology.scopes), vms=len(runtime.topology.vms))
    try:
        await done.wait()
    finally:
        stop()
        await endpoint_server.close()
        await control_task
        if scheduler_task is not None:
            scheduler_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await scheduler_task
        heap_task.cancel()
        if reactions_task is not None:
            reactions_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reactions_task  # what it holds is written by runtime.close()
        if cluster is not None:
            await cluster.stop()  # a leader writes what it accepted and frees the lock
        with contextlib.suppress(StoreUnavailable):
            await runtime.fabric.durable()  # what was accepted is written before we go
        log.info("stopped", db=runtime.config.where, store_error=_store_error(runtime))


def _store_error(runtime: Runtime) -> str | None:
    error = runtime.fabric.store_error()
    return None if error is None else str(error)


def _raise_open_file_limit() -> None:
    """A fleet keeps a connection per VM open: allow as many descriptors as the host does."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def run_server(
    runtime: Runtime,
    listeners: Listeners,
    *,
    ready: Callable[[], None] | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM, on uvloop."""
    import uvloop

    _raise_open_file_limit()
    freeze_startup_heap()
    # A thread that holds the GIL (the writer) hands it back within 1 ms, not 5.
    sys.setswitchinterval(0.001)
    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(_serve(runtime, listeners, ready))
    finally:
        listeners.close()
        runtime.close()
