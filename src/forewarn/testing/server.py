"""An in-process forewarn on a virtual clock, served on real loopback sockets.

Users' code under test calls real URLs (with httpx, requests, urllib, curl…), so the kit
serves the real endpoint protocol on ``127.0.0.1``, one port per VM (the fleet's
``port_base``), plus the control API, from an event loop in a background thread. Tests
drive it through the control API over HTTP (``forewarn.controlapi``, the one client of it),
so nothing here reaches into the emulator's internals from the test's thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Unpack

import uvicorn
import yaml

from forewarn.admission import Budget, Gate, GuardedProtocol, Pool, guarded
from forewarn.arm import ArmListener, serve_arm
from forewarn.client import AsyncScheduledEventsClient, ScheduledEventsClient
from forewarn.controlapi import ControlClient, ControlError, ControlRefused, TriggerOptions
from forewarn.fabric import Clock, Scheduler
from forewarn.fleet import build_topology, demo_fleet, fleet_from_builtins, fleet_to_builtins
from forewarn.imds import serve_endpoint
from forewarn.server import Listeners, Runtime, ServeConfig, build_runtime, open_listeners
from forewarn.server.arm_listener import arm_settings

__all__ = ["Forewarn", "ForewarnError", "fleet_mapping"]

Fleet = str | Mapping[str, Any] | None
PORT_RANGE = (20000, 60000)
START_ATTEMPTS = 20


class ForewarnError(RuntimeError):
    """The in-process forewarn refused a request or could not start; says which and why."""


def fleet_mapping(fleet: Fleet) -> dict[str, Any]:
    """A fleet given as YAML text, a mapping or None (the demo fleet) as plain data."""
    if fleet is None:
        return fleet_to_builtins(demo_fleet())
    if isinstance(fleet, str):
        data = yaml.safe_load(fleet)
        if not isinstance(data, dict):
            raise ForewarnError("a fleet given as text must be a YAML mapping")
        return data
    return dict(fleet)


def _has_ports(data: Mapping[str, Any]) -> bool:
    if data.get("port_base") is not None:
        return True
    for scope in data.get("scopes") or ():
        vms = scope.get("vms") if isinstance(scope, Mapping) else None
        if isinstance(vms, list) and any(isinstance(v, Mapping) and v.get("port") for v in vms):
            return True
    return False


def _free_block(size: int) -> int:
    """A first port of ``size`` consecutive ports free right now on 127.0.0.1."""
    for _ in range(200):
        base = random.randint(PORT_RANGE[0], PORT_RANGE[1] - size)
        held: list[socket.socket] = []
        try:
            for port in range(base, base + size):
                sock = socket.socket()
                held.append(sock)
                sock.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for sock in held:
                sock.close()
    raise ForewarnError(f"found no {size} consecutive free ports on 127.0.0.1")


class Forewarn:
    """One in-process forewarn: per-VM URLs, clients, and a control handle.

    ``fleet`` is YAML text, a mapping (the fleet-file schema) or None for the demo fleet.
    Defaults suit tests: every scope's Scheduled Events on from the start, no rate limit,
    a virtual clock frozen at ``start`` (default: now) that moves only by ``advance()``.
    ``arm=True`` also serves Azure's control plane (ARM) over HTTPS on loopback: point
    azure-mgmt-compute at ``arm_url``, trusting ``arm_ca`` (any bearer token is accepted).
    """

    def __init__(
        self,
        fleet: Fleet = None,
        *,
        start: float | None = None,
        enablement: Literal["on-first-request", "always"] = "always",
        rate_limit: float = 0.0,
        time_scale: float = 1.0,
        first_call_delay: float = 0.0,
        arm: bool = False,
    ) -> None:
        self._fleet = fleet_mapping(fleet)
        self._arm = arm
        self._arm_listener: ArmListener | None = None
        self._start = time.time() if start is None else start
        self._options: dict[str, Any] = {
            "enablement": enablement,
            "rate_limit": rate_limit,
            "time_scale": time_scale,
            "first_call_delay": first_call_delay,
        }
        self._dir: Path | None = None
        self._runtime: Runtime | None = None
        self._listeners: Listeners | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._control: ControlClient | None = None
        self._clients: list[ScheduledEventsClient] = []
        self._vm_processes: list[subprocess.Popen[Any]] = []
        self._ports: dict[str, int] = {}
        self.default_vm = ""
        self.endpoint_url = ""
        self.control_url = ""
        self.arm_url = ""
        self.arm_ca = ""
        self.subscription = ""
        self.resource_group = ""

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Forewarn:
        """Build the emulator, bind every socket and serve; returns once it answers."""
        self._dir = Path(tempfile.mkdtemp(prefix="forewarn-"))
        try:
            self._bind()
            self._serve()
        except BaseException:
            self.stop()
            raise
        return self

    def _bind(self) -> None:
        try:
            count = len(build_topology(fleet_from_builtins(self._fleet)).vms)
        except Exception as exc:  # a fleet mistake: say it once, plainly
            raise ForewarnError(f"invalid fleet: {exc}") from None
        fixed = _has_ports(self._fleet)
        assert self._dir is not None
        last_error: OSError | None = None
        for attempt in range(START_ATTEMPTS):
            data = dict(self._fleet)
            if not fixed:
                data["port_base"] = _free_block(count)
            fleet_file = self._dir / f"fleet-{attempt}.yaml"
            fleet_file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
            arm: dict[str, Any] = {}
            if self._arm:
                arm = {"arm_bind": "127.0.0.1:0", "arm_ca_dir": str(self._dir / "ca")}
            config = ServeConfig(
                fleet=str(fleet_file), db=str(self._dir / f"forewarn-{attempt}.db"),
                clock="virtual", imds_bind=("127.0.0.1:0",), control_bind="127.0.0.1:0",
                **self._options, **arm,
            )  # fmt: skip
            runtime = build_runtime(config, clock=Clock.virtual(start=self._start))
            try:
                listeners = open_listeners(runtime)
            except OSError as exc:
                runtime.close()
                if fixed:
                    raise
                last_error = exc
                continue  # another process took a port of the block: pick another block
            self._runtime, self._listeners = runtime, listeners
            break
        else:
            raise ForewarnError(
                f"could not bind the per-VM ports in {START_ATTEMPTS} attempts "
                f"(the last: {last_error})"
            ) from last_error
        topology = runtime.topology
        self._ports = {vm.name: vm.port for vm in topology.vms.values() if vm.port is not None}
        self.default_vm = topology.default_vm or next(iter(topology.vms))
        host, port = listeners.imds[0].getsockname()[:2]
        self.endpoint_url = f"http://{host}:{port}"
        host, port = listeners.control.getsockname()[:2]
        self.control_url = f"http://{host}:{port}"

    def _serve(self) -> None:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            try:
                asyncio.run(self._main(ready))
            except BaseException as exc:  # reported to start(); the thread just ends
                failure.append(exc)
                ready.set()

        self._thread = threading.Thread(target=run, name="forewarn-testing", daemon=True)
        self._thread.start()
        if not ready.wait(timeout=30) or failure:
            cause = failure[0] if failure else None
            raise ForewarnError(f"in-process forewarn did not start: {cause!r}") from cause
        self._control = ControlClient(self.control_url)

    async def _main(self, ready: threading.Event) -> None:
        runtime, listeners = self._runtime, self._listeners
        assert runtime is not None and listeners is not None
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        # The served listeners' admission and lingering close (``admission/guard.py``).
        gate = Gate(Pool(Budget.of_process().api_connections))
        config = uvicorn.Config(runtime.control.asgi, lifespan="off", access_log=False,
                                log_level="warning", server_header=False,
                                http=guarded(GuardedProtocol, gate))  # fmt: skip
        control = uvicorn.Server(config)
        scheduler = Scheduler(runtime.fabric, runtime.clock)
        runtime.fabric.run_due()
        scheduler_task = asyncio.create_task(scheduler.run())
        endpoint = await serve_endpoint(runtime.endpoint, listeners.imds)
        settings = arm_settings(runtime)
        arm = await serve_arm(runtime.fabric, settings, lambda _: None, runtime.eventgrid)
        self._arm_listener = arm
        if arm.url is not None and arm.tls is not None and arm.app is not None:
            self.arm_url, self.arm_ca = arm.url, str(arm.tls.ca)
            self.subscription = arm.app.fleet.subscription
            self.resource_group = arm.app.fleet.resource_group
        control_task = asyncio.create_task(control.serve(sockets=[listeners.control]))
        while not control.started and not control_task.done():
            await asyncio.sleep(0.005)
        if control_task.done():
            control_task.result()
        ready.set()
        try:
            await self._stop.wait()
        finally:
            control.should_exit = True
            await endpoint.close()
            await arm.close()
            await control_task
            scheduler_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await scheduler_task

    def stop(self) -> None:
        """Stop serving and delete every file; safe to call twice."""
        for proc in self._vm_processes:
            _end(proc)
        self._vm_processes.clear()
        for client in self._clients:
            client.close()
        self._clients.clear()
        if self._control is not None:
            self._control.close()
            self._control = None
        loop, stop, thread = self._loop, self._stop, self._thread
        if loop is not None and stop is not None and thread is not None and thread.is_alive():
            loop.call_soon_threadsafe(stop.set)
            thread.join(timeout=30)
        self._thread = None
        if self._listeners is not None:
            self._listeners.close()
            self._listeners = None
        if self._runtime is not None:
            self._runtime.close()
            self._runtime = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> Forewarn:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ the VMs

    @property
    def vms(self) -> tuple[str, ...]:
        """Every VM of the fleet, in fleet order."""
        return tuple(self._ports)

    def url(self, vm: str | None = None) -> str:
        """The endpoint as VM ``vm`` (default: the fleet's default VM) sees it."""
        name = vm or self.default_vm
        if name not in self._ports:
            known = ", ".join(self._ports) or "none with a port"
            raise ForewarnError(f"no VM {name!r} in this fleet (VMs: {known})")
        return f"http://127.0.0.1:{self._ports[name]}"

    def client(self, vm: str | None = None, **options: Any) -> ScheduledEventsClient:
        """A ready client speaking as ``vm``; closed when this forewarn stops."""
        options.setdefault("first_call_timeout", 30.0)
        client = ScheduledEventsClient(self.url(vm), **options)
        self._clients.append(client)
        return client

    def async_client(self, vm: str | None = None, **options: Any) -> AsyncScheduledEventsClient:
        """An asyncio client speaking as ``vm`` (close it with ``await client.aclose()``)."""
        options.setdefault("first_call_timeout", 30.0)
        return AsyncScheduledEventsClient(self.url(vm), **options)

    def vm_process(
        self,
        argv: Sequence[str],
        vm: str | None = None,
        *,
        forward: Sequence[str | int] = (),
        **popen: Any,
    ) -> subprocess.Popen[Any]:
        """Start the program under test as VM ``vm`` (default: the fleet's default VM),
        unmodified: ``forewarn exec``, so ``http://169.254.169.254`` is this forewarn's
        endpoint as that VM and its host name is the VM's computer name. ``forward``: ports
        of the host's loopback it may reach (``6379``, ``"127.0.0.1:5432"``); the rest of
        ``popen`` goes to ``subprocess.Popen``. Stopped (SIGTERM) when this forewarn stops.
        """
        name = vm or self.default_vm
        self.url(name)  # an unknown VM fails here, plainly
        command = [
            sys.executable, "-m", "forewarn", "--control", self.control_url, "exec",
            "--vm", name, "--endpoint", self.endpoint_url,
            *(f"--forward={port}" for port in forward), "--", *argv,
        ]  # fmt: skip
        proc: subprocess.Popen[Any] = subprocess.Popen(command, **popen)
        self._vm_processes.append(proc)
        return proc

    # ------------------------------------------------------------------ control

    @contextlib.contextmanager
    def _api(self) -> Iterator[ControlClient]:
        """The control API client; every failure of a call becomes a ForewarnError."""
        if self._control is None:
            raise ForewarnError("this forewarn is not running (start() it first)")
        try:
            yield self._control
        except ControlRefused as exc:
            path = exc.path.removeprefix("/api/v1")
            raise ForewarnError(f"{exc.method} {path}: {exc}") from None
        except ControlError as exc:
            raise ForewarnError(str(exc)) from None

    def trigger(self, kind: str, target: str, **options: Unpack[TriggerOptions]) -> dict[str, Any]:
        """Start operation ``kind`` (``user-reboot``, ``host-update``…) on a VM, host or scope,
        with ``notice``, ``description`` or ``duration`` if given.

        Returns the operation as the control API shows it (``event_ids``, ``not_before``…).
        """
        with self._api() as api:
            return api.trigger(kind, target, **options)

    def advance(self, seconds: float) -> float:
        """Move the virtual clock on, firing every timer that comes due; the new time."""
        with self._api() as api:
            return float(api.advance(seconds)["now"])

    def now(self) -> float:
        """The emulator's current (virtual) time, as a POSIX timestamp."""
        with self._api() as api:
            return float(api.clock()["now"])

    def events(self) -> list[dict[str, Any]]:
        """Every live event, as the control API lists them."""
        with self._api() as api:
            return api.events()

    def event(self, event_id: str) -> dict[str, Any]:
        """One live event (its status, who approved it…)."""
        with self._api() as api:
            return api.event(event_id)

    def document(self, vm: str | None = None, api_version: str = "2020-07-01") -> dict[str, Any]:
        """The document ``vm`` would get (without counting as its request)."""
        with self._api() as api:
            return api.document(vm or self.default_vm, api_version)

    def _action(self, event_id: str, action: str) -> dict[str, Any]:
        with self._api() as api:
            return api.event_action(event_id, action)

    def approve(self, event_id: str) -> dict[str, Any]:
        """Approve as the operator (the event starts once all its parties approved)."""
        return self._action(event_id, "approve")

    def start_event(self, event_id: str) -> dict[str, Any]:
        """Start ``event_id``'s operation now."""
        return self._action(event_id, "start")

    def cancel(self, event_id: str) -> dict[str, Any]:
        """Cancel a Scheduled event (it disappears, no impact)."""
        return self._action(event_id, "cancel")

    def complete(self, event_id: str) -> dict[str, Any]:
        """End a Started event now (it disappears)."""
        return self._action(event_id, "complete")

    def history(self) -> list[dict[str, Any]]:
        """Every transition so far, oldest first."""
        with self._api() as api:
            return api.history()


def _end(proc: subprocess.Popen[Any]) -> None:
    """A VM process ended: SIGTERM (forewarn exec passes it on), then SIGKILL."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
