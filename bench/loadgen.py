"""Helpers the fleet benchmarks share: build and run the Go generator, watch a server.

The generator (``bench/fleetgen``, Go standard library only) is built with ``go build``
into a temporary directory on every run, offline (``GOPROXY=off``); nothing is
downloaded. Server and generator are pinned to different cores, and the server's CPU and
RSS are read from ``/proc`` while the load runs.
"""

from __future__ import annotations

import bisect
import contextlib
import http.client
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "FLEETGEN_SOURCE",
    "LOAD_CPU",
    "PRIORITIES",
    "SERVER_CPU",
    "FleetgenRun",
    "ProcSampler",
    "ServerHandle",
    "build_fleetgen",
    "control_call",
    "exit_on_sigterm",
    "forewarn_env",
    "free_port",
    "go_missing_reason",
    "load_average",
    "pinned",
    "prioritised",
    "start_server",
    "wait_for_port",
    "write_vms_file",
]

FLEETGEN_SOURCE = Path(__file__).resolve().parent / "fleetgen"
PATH = "/metadata/scheduledevents?api-version=2020-07-01"
SERVER_CPU, LOAD_CPU = 0, 1


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(
    port: int, timeout: float = 60.0, proc: subprocess.Popen[Any] | None = None
) -> None:
    """Return once something accepts on ``port``; fail early if ``proc`` died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port} after {timeout:.0f}s")


def pinned(cpu: int, command: Sequence[str]) -> list[str]:
    """Run on one CPU when taskset exists and the CPU does: server and load never share."""
    if shutil.which("taskset") and cpu < (os.cpu_count() or 1):
        return ["taskset", "-c", str(cpu), *command]
    return list(command)


PRIORITIES = ("normal", "high", "realtime")


def prioritised(priority: str, command: Sequence[str]) -> list[str]:
    """Run ahead of the machine's other work: ``high`` is nice -20, ``realtime`` is
    SCHED_FIFO (both need root; the kernel still leaves others 5 % of each core).

    On a shared machine neighbours take the benchmark's cores and their time shows up as
    server latency; the run-queue wait of each window says how well this worked."""
    if priority == "high":
        return ["nice", "-n", "-20", *command]
    if priority == "realtime":
        return ["chrt", "--fifo", "10", *command]
    if priority != "normal":
        raise ValueError(f"priority must be one of {', '.join(PRIORITIES)}")
    return list(command)


def load_average() -> str:
    """The 1/5/15-minute load average, to say how busy the machine was."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def go_missing_reason() -> str | None:
    """Why the Go generator cannot be built here, or None when it can."""
    if shutil.which("go") is None:
        return "go is not installed (Debian: apt-get install golang-go)"
    return None


def exit_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit, so every server a benchmark started is stopped."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def forewarn_env(source: Path | None) -> dict[str, str]:
    """Environment for ``python -m forewarn``: ``source`` (a ``src`` directory, e.g. of
    ``git archive COMMIT``) is imported instead of the installed tree when given."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if source is not None:
        if not (source / "forewarn" / "__init__.py").is_file():
            raise RuntimeError(f"{source} holds no forewarn package (give its src directory)")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source), env.get("PYTHONPATH")]))
    return env


def build_fleetgen(directory: Path) -> Path:
    """Compile the generator into ``directory`` (offline, standard library only)."""
    reason = go_missing_reason()
    if reason is not None:
        raise RuntimeError(reason)
    binary = directory / "fleetgen"
    env = {**os.environ, "GOPROXY": "off", "GOFLAGS": "", "CGO_ENABLED": "0"}
    if "HOME" not in env and "GOCACHE" not in env:
        env["GOCACHE"] = str(directory / "gocache")
    result = subprocess.run(
        ["go", "build", "-o", str(binary), "."],
        cwd=FLEETGEN_SOURCE,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"go build of {FLEETGEN_SOURCE} failed:\n{result.stderr}")
    return binary


def write_vms_file(path: Path, vms: Sequence[tuple[str, str, bool]]) -> Path:
    """The generator's VM list: ``ADDRESS NAME [approve]`` per line."""
    lines = [f"{addr} {name}{' approve' if approves else ''}" for addr, name, approves in vms]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def control_call(
    port: int, method: str, path: str, body: Any = None, timeout: float = 60.0
) -> tuple[int, Any, float]:
    """One control-API call: (status, decoded JSON body, seconds it took)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        payload = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if payload is not None else {}
        started = time.perf_counter()
        conn.request(method, path, body=payload, headers=headers)
        response = conn.getresponse()
        raw = response.read()
        took = time.perf_counter() - started
    finally:
        conn.close()
    return response.status, (json.loads(raw) if raw else None), took


@dataclass
class ServerHandle:
    """A server child process and where its output went."""

    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid


def quiet_serve_command(fleet: Path, db: Path, imds: int, control: int, *clock: str) -> list[str]:
    """``forewarn serve`` of ``fleet`` on loopback ports, every scope on, no rate limit and
    warnings only (what a benchmark's own clients need), on the clock ``clock`` says."""
    return [
        sys.executable, "-m", "forewarn", "serve", "--fleet", str(fleet), "--db", str(db),
        *clock, "--enablement", "always", "--rate-limit", "0", "--log-level", "warning",
        "--imds-bind", f"127.0.0.1:{imds}", "--control-bind", f"127.0.0.1:{control}",
    ]  # fmt: skip


@contextlib.contextmanager
def start_server(
    command: Sequence[str],
    ports: Sequence[int],
    log: Path,
    timeout: float = 120.0,
    env: dict[str, str] | None = None,
    priority: str = "normal",
) -> Iterator[ServerHandle]:
    """A server pinned to the server CPU, output to ``log``, until the block ends."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            prioritised(priority, pinned(SERVER_CPU, command)),
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env or forewarn_env(None),
        )
    try:
        for port in ports:
            wait_for_port(port, timeout=timeout, proc=proc)
        yield ServerHandle(proc, log)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class ProcSampler:
    """CPU share, run-queue wait and RSS of one process, read from /proc.

    The run-queue wait of the main thread (an event loop's) is how long it was ready to
    run while something else had its core: on a shared machine, how much of a window
    measured the neighbours instead of the server. ``wait_percent`` sums every thread
    (threads pinned to one core also wait for each other).
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._tick = os.sysconf("SC_CLK_TCK")
        self._page = os.sysconf("SC_PAGE_SIZE")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start: tuple[float, float, float, float] | None = None
        self.rss_max = 0
        self.cpu_percent = 0.0
        self.wait_percent = 0.0
        self.main_wait_percent = 0.0

    def _cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / self._tick  # utime, stime

    def _waits(self) -> tuple[float, float]:
        """Seconds waited on a run queue: (every thread, the main thread)."""
        total = main = 0
        for task in Path(f"/proc/{self.pid}/task").iterdir():
            with contextlib.suppress(OSError, IndexError, ValueError):
                waited = int((task / "schedstat").read_text().split()[1])
                total += waited
                if task.name == str(self.pid):
                    main = waited
        return total / 1e9, main / 1e9

    def rss(self) -> int:
        """Resident set size in bytes, now."""
        pages = int(Path(f"/proc/{self.pid}/statm").read_text().split()[1])
        return pages * self._page

    def _watch(self) -> None:
        while not self._stop.wait(1.0):
            with contextlib.suppress(OSError):
                self.rss_max = max(self.rss_max, self.rss())

    def begin(self) -> None:
        """Start the window."""
        self._start = (time.monotonic(), self._cpu_seconds(), *self._waits())
        self.rss_max = self.rss()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def end(self) -> None:
        """Close the window: averages over it, in % of one core (or of the wall time)."""
        assert self._start is not None, "begin() first"
        wall0, cpu0, wait0, main0 = self._start
        wall = time.monotonic() - wall0
        if wall > 0:
            waited, main = self._waits()
            self.cpu_percent = 100.0 * (self._cpu_seconds() - cpu0) / wall
            self.wait_percent = 100.0 * (waited - wait0) / wall
            self.main_wait_percent = 100.0 * (main - main0) / wall
        with contextlib.suppress(OSError):
            self.rss_max = max(self.rss_max, self.rss())
        self._stop.set()


class LoopWaits:
    """When each process's main thread (an event loop's) waited for its core, sampled
    every ``every`` s from the moment it is made, with ``clock``'s time; with ``cpu``, also
    the time the hypervisor took that CPU away from this machine (its steal time).

    A stall in which the loop was ready to run but waited for its core is the doing of
    whatever ran there instead (on a shared machine, a neighbour; with workers, also a
    sibling worker); one in which the CPU itself was stolen is the host's (the machine's
    own scheduler never sees it: no wait); a stall with neither is the server's own work.
    """

    def __init__(
        self,
        pids: Sequence[int],
        every: float = 0.005,
        clock: Callable[[], float] = time.time,
        cpu: int | None = None,
    ) -> None:
        self._files = [os.open(f"/proc/{pid}/task/{pid}/schedstat", os.O_RDONLY) for pid in pids]
        self._stat: int | None = None
        self._cpu_label = b""
        if cpu is not None:  # (a CPU /proc/stat does not list would lose every sample)
            self._cpu_label = f"cpu{cpu} ".encode()
            self._stat = os.open("/proc/stat", os.O_RDONLY)
            try:
                self._steal()
            except ValueError:
                os.close(self._stat)
                raise ValueError(f"/proc/stat has no CPU {cpu}") from None
        self._every = every
        self._clock = clock
        self._stop = threading.Event()
        #: (``clock()``, each loop's total run-queue wait in ns) per sample, in time order.
        self.samples: list[tuple[float, tuple[int, ...]]] = []
        #: ``cpu``'s steal time (clock ticks) at each sample (empty without ``cpu``).
        self.steals: list[int] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            with contextlib.suppress(OSError, IndexError, ValueError):  # a server that ended
                waits = tuple(int(os.pread(fd, 128, 0).split()[1]) for fd in self._files)
                steal = self._steal() if self._stat is not None else None
                self.samples.append((self._clock(), waits))
                if steal is not None:
                    self.steals.append(steal)

    def _steal(self) -> int:
        """The CPU's steal time so far, in clock ticks (``/proc/stat``'s eighth column)."""
        assert self._stat is not None
        text = os.pread(self._stat, 1 << 16, 0)
        start = text.index(b"\n" + self._cpu_label) + 1
        return int(text[start : text.index(b"\n", start)].split()[8])

    def __enter__(self) -> LoopWaits:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        if not self._thread.is_alive():  # (a descriptor closed under it could be reused)
            for fd in [*self._files, *([self._stat] if self._stat is not None else [])]:
                os.close(fd)
            self._files, self._stat = [], None

    def waited_ms(self, start: float, end: float) -> float:
        """The longest any loop waited for its core from ``start`` to ``end`` (``clock``
        seconds), in ms; counted from the last sample before ``start`` to the first after
        ``end`` (so up to one sampling interval either side), or over what was sampled of
        it when the samples begin or end inside it."""
        span = self._span(start, end)
        if span is None:
            return 0.0
        before, after = self.samples[span[0]][1], self.samples[span[1]][1]
        return max((b - a) / 1e6 for a, b in zip(before, after, strict=True))

    def stolen_ms(self, start: float, end: float) -> float:
        """The CPU's steal time from ``start`` to ``end``, in ms, counted as ``waited_ms``
        counts (the kernel counts it in whole ticks: 10 ms at the usual 100 a second)."""
        span = self._span(start, end)
        if span is None or not self.steals:
            return 0.0
        ticks = self.steals[span[1]] - self.steals[span[0]]
        return ticks * 1000 / os.sysconf("SC_CLK_TCK")

    def _span(self, start: float, end: float) -> tuple[int, int] | None:
        """The samples just before ``start`` and just after ``end`` (None: none between)."""
        times = [t for t, _ in self.samples]
        first = max(0, bisect.bisect_right(times, start) - 1)
        last = min(len(times) - 1, bisect.bisect_left(times, end))
        return (first, last) if last > first else None


@dataclass
class FleetgenRun:
    """The generator running in the background; ``start`` is its first scheduled poll."""

    proc: subprocess.Popen[str]
    start: float
    stderr: list[str] = field(default_factory=list)
    pump: threading.Thread | None = None

    @classmethod
    def launch(
        cls,
        binary: Path,
        port: int,
        vms_file: Path,
        seconds: float,
        *,
        rate: float = 1.0,
        extra: Sequence[str] = (),
        ready_timeout: float = 180.0,
        priority: str = "normal",
    ) -> FleetgenRun:
        """Start the generator pinned to the load CPU and wait until every VM connected."""
        command = [
            str(binary),
            "-target",
            f"127.0.0.1:{port}",
            "-vms",
            str(vms_file),
            "-seconds",
            f"{seconds:g}",
            "-rate",
            f"{rate:g}",
            "-path",
            PATH,
            *extra,
        ]
        proc = subprocess.Popen(
            prioritised(priority, pinned(LOAD_CPU, command)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines: queue.Queue[str | None] = queue.Queue()
        captured: list[str] = []

        def pump() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                captured.append(line.rstrip("\n"))
                lines.put(line)
            lines.put(None)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1.0)
            except queue.Empty:
                continue
            if line is None:
                break
            if line.startswith("fleetgen: ready start="):
                start = float(line.split("start=", 1)[1].split()[0])
                return cls(proc, start, captured, reader)
        proc.kill()
        raise RuntimeError("fleetgen did not get ready:\n" + "\n".join(captured))

    def result(self) -> dict[str, Any]:
        """Wait for the report."""
        assert self.proc.stdout is not None and self.proc.stderr is not None
        with self.proc.stdout:
            out = self.proc.stdout.read()
        code = self.proc.wait()
        if self.pump is not None:
            self.pump.join(timeout=10)
        self.proc.stderr.close()
        if code != 0 or not out.strip():
            raise RuntimeError(f"fleetgen failed ({code}):\n" + "\n".join(self.stderr))
        report: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return report

    def sleep_until(self, offset: float) -> None:
        """Sleep until ``offset`` seconds after the first scheduled poll."""
        delay = self.start + offset - time.time()
        if delay > 0:
            time.sleep(delay)
