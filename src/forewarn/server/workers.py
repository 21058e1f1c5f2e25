"""``forewarn serve --workers N``: N processes on one host serving one fleet.

Each worker is a whole ``forewarn serve`` on the shared PostgreSQL store: its listeners
(endpoint, per-VM ports, control API) are bound with ``SO_REUSEPORT``, so the kernel
spreads connections over the workers, and one worker, elected, leads. Each worker also
has a control listener of its own on an ephemeral port: that is the address the leader
is reached at when another worker forwards a change to it.

The parent only supervises: it prints one banner once every worker is ready, restarts
a worker that dies (the fleet carries on meanwhile: another worker takes the lead), and
on SIGINT/SIGTERM stops them all. A worker that loses its parent stops too.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import queue
import signal
import sys
import time
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from typing import Any

import structlog

from forewarn.fabric import FabricError
from forewarn.fleet import FleetError
from forewarn.server.config import ServeConfig
from forewarn.server.listeners import banner, bind_listeners
from forewarn.server.logs import configure_logging
from forewarn.server.runtime import build_runtime, prepare
from forewarn.server.serving import run_server
from forewarn.store import StoreError

__all__ = ["run_workers"]

log = structlog.get_logger("forewarn")

#: How long every worker has to become ready, and to stop.
START_SECONDS = 120.0
STOP_SECONDS = 30.0
#: A worker that dies is restarted after this pause.
RESTART_SECONDS = 1.0


@dataclass
class _Worker:
    index: int
    process: BaseProcess
    ready: bool = False


def _die_with_parent(parent: int) -> None:
    """Linux: SIGTERM this worker when its parent goes (even on SIGKILL). A parent that
    went while this worker was starting (before it asked) ends it now: else it would
    serve on the ports for ever, unsupervised."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        raise SystemExit(0)


def _worker_main(
    config: ServeConfig, index: int, events: Any, scenarios: Any = None, parent: int = 0
) -> None:
    """One worker: the same steps as ``forewarn serve``, reporting to ``parent`` (its
    pid); ``scenarios`` is ``build_runtime``'s (a function, pickled by name)."""
    _die_with_parent(parent)
    configure_logging(config.log_format, config.log_level)
    try:
        prepared = prepare(config)
        listeners = bind_listeners(config, prepared.topology)
        runtime = build_runtime(config, prepared=prepared, scenarios=scenarios)
    except (FabricError, FleetError, StoreError, OSError) as exc:
        events.put((index, "error", str(exc)))
        sys.exit(1)

    def ready() -> None:
        events.put((index, "ready", list(banner(runtime, listeners))))

    run_server(runtime, listeners, ready=ready)


class _Supervisor:
    def __init__(self, config: ServeConfig, scenarios: Any = None) -> None:
        self.config = config
        self.scenarios = scenarios
        self.context = multiprocessing.get_context("spawn")
        self.events: Any = self.context.Queue()
        self.workers: dict[int, _Worker] = {}
        self.stopping = False

    def spawn(self, index: int) -> None:
        process = self.context.Process(
            target=_worker_main,
            args=(self.config, index, self.events, self.scenarios, os.getpid()),
            name=f"forewarn-worker-{index}",
            daemon=False,
        )
        process.start()
        self.workers[index] = _Worker(index, process)

    def start_all(self) -> list[str] | str:
        """Start every worker; the first one's banner, or why starting failed."""
        for index in range(self.config.workers):
            self.spawn(index)
        lines: list[str] = []
        deadline = time.monotonic() + START_SECONDS
        while not all(w.ready for w in self.workers.values()):
            if self.stopping:
                return "stopped while starting"
            try:
                index, kind, payload = self.events.get(timeout=0.2)
            except queue.Empty:
                dead = [w for w in self.workers.values() if not w.process.is_alive()]
                if dead:
                    return f"worker {dead[0].index} exited while starting"
                if time.monotonic() > deadline:
                    return f"the workers did not start within {START_SECONDS:.0f} s"
                continue
            if kind == "error":
                return str(payload)
            self.workers[index].ready = True
            if index == 0:
                lines = list(payload)
        return lines

    def supervise(self) -> None:
        """Restart workers that die, until asked to stop."""
        while not self.stopping:
            with contextlib.suppress(queue.Empty):
                index, kind, _ = self.events.get(timeout=0.5)
                if kind == "ready" and index in self.workers:
                    pid = self.workers[index].process.pid
                    print(f"forewarn: worker {index} (pid {pid}) is serving again", flush=True)
            for worker in list(self.workers.values()):
                if self.stopping or worker.process.is_alive():
                    continue
                code = worker.process.exitcode
                log.warning("worker died; restarting it", worker=worker.index, exit_code=code)
                time.sleep(RESTART_SECONDS)
                if not self.stopping:
                    self.spawn(worker.index)

    def stop_all(self) -> None:
        for worker in self.workers.values():
            if worker.process.is_alive():
                with contextlib.suppress(OSError):
                    worker.process.terminate()
        deadline = time.monotonic() + STOP_SECONDS
        for worker in self.workers.values():
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(5)


def run_workers(config: ServeConfig, *, scenarios: Any = None) -> int:
    """Serve ``config`` with ``config.workers`` processes until SIGINT/SIGTERM
    (``scenarios``: see ``build_runtime``)."""
    supervisor = _Supervisor(config, scenarios)

    def stop(signum: int, _frame: object) -> None:
        supervisor.stopping = True

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        started = supervisor.start_all()
        if isinstance(started, str):
            print(f"forewarn: {started}", file=sys.stderr, flush=True)
            return 1
        for line in started:
            print(line, flush=True)
        pids = ", ".join(str(w.process.pid) for w in supervisor.workers.values())
        print(
            f"forewarn: {config.workers} workers (pids {pids}) share the fleet; "
            "`forewarn status` shows which one leads",
            flush=True,
        )
        supervisor.supervise()
        return 0
    finally:
        supervisor.stop_all()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
