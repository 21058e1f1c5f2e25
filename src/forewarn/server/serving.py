"""Serving a runtime on its listeners until SIGINT/SIGTERM: the endpoint, the control API
(uvicorn), the scheduler or the cluster's part, and the background tasks; then writing
what was accepted before the process goes."""

from __future__ import annotations

import asyncio
import contextlib
import resource
import signal
import sys
import time
from collections.abc import Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import structlog
import uvicorn

from forewarn.admission import Budget, Gate, Pool, guarded
from forewarn.control import ControlProtocol
from forewarn.fabric import Scheduler, StoreUnavailable
from forewarn.imds import serve_endpoint
from forewarn.server.arm_listener import start_arm
from forewarn.server.cpu_slice import request_slice
from forewarn.server.heap import HeapKeeper, freeze_startup_heap
from forewarn.server.listeners import Listeners
from forewarn.server.runtime import Runtime
from forewarn.store import SQLiteStore, yield_to_the_loop

__all__ = ["run_server"]

log = structlog.get_logger("forewarn")

#: How often the SQLite file is checked for damaged pages (at least; a check that takes
#: long is run less often, so that checking never takes more than 1/20 of the time).
PAGE_CHECK_SECONDS = 5.0


class _QuietServer(uvicorn.Server):
    """A uvicorn server that leaves signal handling to ``run_server``."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def _uvicorn(app: Any, gate: Gate) -> _QuietServer:
    config = uvicorn.Config(
        app,
        # Admission (``gate``); drops clients that stop reading (dashboard streams).
        http=guarded(ControlProtocol, gate),
        ws="none",  # no route is a WebSocket (nor its library imported on every start)
        timeout_graceful_shutdown=5,  # then in-flight requests are cancelled
        lifespan="off",
        access_log=False,
        log_level="warning",
        server_header=False,
        timeout_keep_alive=75,
        backlog=4096,
    )
    return _QuietServer(config)


async def _serve(runtime: Runtime, listeners: Listeners, ready: Callable[[], None] | None) -> None:
    # One budget of descriptors for every listener: the API listeners share a pool, the
    # endpoint sheds its own connections below their share (``admission/budget.py``).
    budget = Budget.of_process()
    config = runtime.config
    pool = Pool(budget.api_connections, config.api_max_connections_per_address)
    control_server = _uvicorn(
        runtime.control.asgi, Gate(pool, header_timeout=config.api_header_timeout)
    )
    cluster = runtime.cluster
    scheduler = Scheduler(runtime.fabric, runtime.clock) if cluster is None else None
    if cluster is not None:
        cluster.control_url = listeners.control_url()
        cluster.start()  # follows at once; leads (and schedules) once elected
    if any(r.region and not r.done for r in runtime.fabric.rollouts()):
        # a region rollout under way: its walk over the fleet (half a second at a million
        # VMs) built on a thread, not by the first wave's timer on the loop
        walk = asyncio.create_task(asyncio.to_thread(runtime.topology.update_domain_walk))
        walk.add_done_callback(lambda task: task.exception())  # (a failure: the timer's)
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
    endpoint_server = await serve_endpoint(
        runtime.endpoint, listeners.imds, shed_from=budget.endpoint_threshold
    )
    arm = await start_arm(runtime, pool)  # the ARM listener, when --arm-bind is given
    pages_task = asyncio.create_task(_check_pages(runtime), name="forewarn-page-check")
    if runtime.eventgrid is not None:  # where a webhook finishes a manual handshake
        runtime.eventgrid.validation_url = listeners.control_url() + "/api/v1/eventgrid/validate"
        await runtime.eventgrid.resume()  # the subscriptions and notices kept before a restart
    heap_task = asyncio.create_task(  # freezes the fleet's connections once they are in
        HeapKeeper(lambda: endpoint_server.connections).run(), name="forewarn-heap"
    )
    control_task = asyncio.create_task(control_server.serve(sockets=listeners.control_sockets()))
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
        await arm.close()
        if runtime.eventgrid is not None:
            await runtime.eventgrid.close()  # notices still queued stay kept for the next start
        await control_task
        if scheduler_task is not None:
            scheduler_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await scheduler_task
        heap_task.cancel()
        pages_task.cancel()
        if reactions_task is not None:
            reactions_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reactions_task  # what it holds is written by runtime.close()
        if cluster is not None:
            await cluster.stop()  # a leader writes what it accepted and frees the lock
        with contextlib.suppress(StoreUnavailable):
            await runtime.fabric.durable()  # what was accepted is written before we go
        log.info("stopped", db=runtime.config.where, store_error=_store_error(runtime))


async def _check_pages(runtime: Runtime) -> None:
    """Look for damaged pages in the SQLite file now and then, off the loop: once one is
    found, the store refuses writes, and a probe write makes the fabric (and so
    ``/healthz``) say so at once rather than at the next change.

    The check reads the whole file (a tenth of a second at 100 MB) without the GIL, so
    it runs on a thread of its own below the loop's priority: on the loop's core, and
    under a real-time policy, a thread of the loop's priority would hold the loop up
    for all that time."""
    store = runtime.store
    if not isinstance(store, SQLiteStore):
        return
    loop = asyncio.get_running_loop()
    checker = ThreadPoolExecutor(
        1, thread_name_prefix="forewarn-page-check", initializer=yield_to_the_loop
    )
    try:
        while True:
            await asyncio.sleep(PAGE_CHECK_SECONDS)
            started = time.monotonic()
            error = await loop.run_in_executor(checker, store.check_pages)
            if error is not None:
                runtime.fabric.probe_store()
                return
            await asyncio.sleep(20 * (time.monotonic() - started))
    finally:
        checker.shutdown(wait=False)  # a check under way ends on its own


def _store_error(runtime: Runtime) -> str | None:
    error = runtime.fabric.store_error()
    return None if error is None else str(error)


def _raise_open_file_limit() -> None:
    """A fleet keeps a connection per VM open: allow as many descriptors as the host does."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _shorten_the_loops_slice(milliseconds: float) -> None:
    """This thread (the event loop's) preempts sooner on its core: ``cpu_slice.py``."""
    if milliseconds == 0:
        return
    refused = request_slice(milliseconds / 1000)
    if refused is None:
        log.debug("event loop slice", milliseconds=milliseconds)
    else:
        log.debug("event loop slice left to the kernel", reason=refused)


def run_server(
    runtime: Runtime,
    listeners: Listeners,
    *,
    ready: Callable[[], None] | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM, on uvloop."""
    import uvloop

    _raise_open_file_limit()
    _shorten_the_loops_slice(runtime.config.loop_slice)
    freeze_startup_heap()
    # A thread that holds the GIL (the writer) hands it back within 1 ms, not 5.
    sys.setswitchinterval(0.001)
    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(_serve(runtime, listeners, ready))
    finally:
        listeners.close()
        runtime.close()
