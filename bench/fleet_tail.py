"""Fleet tail latency: 10,000 VMs polling at 1 Hz while a rolling reboot runs and VMs approve.

    .venv/bin/python bench/fleet_tail.py --vms 10000 --seconds 30 --runs 3

Each run starts a fresh ``forewarn serve`` (a fleet of N VMs with a 200-VM availability
set, ``--time-scale 60``) and, alternately, the canned-bytes asyncio server; the Go
generator (``bench/fleetgen``, built here with ``go build``) opens one keep-alive
connection per VM from the VM's own address and polls at 1 Hz with random phases.
Latency counts from each poll's scheduled send time (no coordinated omission). A few
seconds into each forewarn window a rolling platform reboot of the availability set is
created through the control API; every 4th VM of the set approves the events that list
it. Server and generator run on separate cores; the server's CPU and RSS come from /proc.

It prints a table per run, the forewarn/canned ratios of p99 and p99.9 per pair of runs,
and PASS/MISS per target of issue 5. A run in which the generator fell behind its own
schedule (send lag p99 above ``--max-lag-ms``, polls left unsent, VMs not connected), or
in which the server's event loop waited for its core (another process had it) more than
``--max-wait`` % of the window, is marked invalid and counts for no target. On a shared
machine ``--priority realtime`` (root) runs server and generator ahead of other work.
``--profile out.svg`` records one more forewarn run with py-spy (``pip install py-spy``),
outside the table (``.json``: speedscope, ``.txt``: collapsed stacks).

Each stall (polls that finished late together) is listed with the generator's own
lateness, the longest answer, and ``w``: the longest a server loop waited for its core
during it (its run-queue wait, sampled every 5 ms; ``--json``: ``loop_wait_ms``), and
``s``: the server CPU's steal time meanwhile, when there was some (the hypervisor ran
something else on it; in 10 ms ticks; ``steal_ms``). A stall whose ``w`` is about its
length was the doing of whatever ran on the server's core instead (a neighbour, or with
workers a sibling), one with ``s`` the host's; one with ``w0``, no ``s`` and an on-time
generator is the server's own work.

Issue 17's rows:

- ``--streams 100 --report-every 10``: during each forewarn window 100 dashboard streams
  (``GET /api/v1/stream``, opened before the generator, read continuously by a child
  process on the generator's core below its priority) are open and one client fetches the
  HTML report (``GET /api/v1/report``) every 10 s from the window's start. The canned
  server's window is unchanged, so the ratios compare forewarn with streams against canned.
  Printed (and in ``--json``, ``dashboard``): streams opened and still open at the end,
  each report fetch's second, time and status; a stream that ended or a fetch that failed
  makes the run invalid.
- ``--store postgresql://postgres@127.0.0.1:5432/postgres --workers 2``: forewarn served
  from a fresh PostgreSQL database per run (created on that server, dropped after) by
  ``--workers`` processes; the generator's connections are spread over them by the kernel
  (SO_REUSEPORT). A PostgreSQL server of this machine is held on one core for the whole
  benchmark (``store_pinning``; ``--store-cpu``, the server's by default). With
  ``--store-cpu 1 --generator-priority realtime`` it runs on the generator's core strictly
  below the generator, the nearest this 2-core machine comes to a store on another host:
  the front-ends' core is theirs alone, as the canned servers' is, and the generator is
  never late for it. CPU and RSS are summed over the workers (found through
  ``GET /api/v1/cluster``) and shown per worker; the CPU and RSS targets apply to the
  busiest worker. The workers share the server's core, so each one's loop also waits while
  another runs: the validity check takes the other workers' CPU off each one's wait. The
  canned server then runs as as many processes on the same core, sharing the port the same
  way: each front-end is compared with a canned one that shares its core as it does.
  Collector pauses are then listed with the worker that paused.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dashboard_streams import HeldStreams, streams_held
from imds_throughput import BARE_SERVER
from loadgen import (
    LOAD_CPU,
    PRIORITIES,
    SERVER_CPU,
    FleetgenRun,
    LoopWaits,
    ProcSampler,
    build_fleetgen,
    control_call,
    exit_on_sigterm,
    forewarn_env,
    free_port,
    go_missing_reason,
    load_average,
    start_server,
    write_vms_file,
)
from tail_report import AVSET, Run, print_report, targets

__all__ = ["Run", "fleet_yaml", "main", "targets"]

GC_PROBE = Path(__file__).resolve().parent / "gcprobe"


def fleet_yaml(vms: int, avset: int) -> str:
    """N VMs: an availability set of ``avset`` VMs and a scale set in groups of 100."""
    rest = vms - avset
    lines = [
        "scopes:",
        f"  - {{kind: availability_set, name: {AVSET}, vms: {avset}, update_domains: 5, "
        "fault_domains: 2}",
    ]
    if rest > 0:
        groups = max(1, rest // 100)
        lines.append(
            f"  - {{kind: scale_set, name: fleet, vms: {rest}, placement_groups: {groups}}}"
        )
    return "\n".join(lines) + "\n"


def _vm_list(control_port: int, approve_every: int) -> list[tuple[str, str, bool]]:
    status, vms, _ = control_call(control_port, "GET", "/api/v1/vms")
    if status != 200:
        raise RuntimeError(f"GET /api/v1/vms answered {status}")
    out, position = [], 0
    for vm in vms:
        approves = False
        if vm["scope"] == AVSET and approve_every > 0:
            approves = position % approve_every == 0
            position += 1
        out.append((vm["address"], vm["name"], approves))
    return out


@dataclass
class _Window:
    """The server's (each worker's) and the generator's /proc figures over one window."""

    servers: list[ProcSampler]
    generator: ProcSampler
    #: When each server loop waited for its core (tells a stall's cause).
    waits: LoopWaits
    start: float  # the generator's first scheduled poll (time.time())

    @classmethod
    def begin(cls, server_pids: list[int], gen: FleetgenRun) -> _Window:
        waits = LoopWaits(server_pids, cpu=SERVER_CPU)
        gen.sleep_until(0)
        window = cls(
            [ProcSampler(pid) for pid in server_pids], ProcSampler(gen.proc.pid), waits, gen.start
        )
        for sampler in [*window.servers, window.generator]:
            sampler.begin()
        return window

    def end(self) -> None:
        for sampler in [*self.servers, self.generator]:
            sampler.end()
        self.waits.stop()

    def _note_waits(self, report: dict[str, Any]) -> None:
        """Add to each stall how long a server loop waited for its core during it, and how
        much of the server's CPU the host took meanwhile."""
        for stall in report.get("stalls") or []:
            begins = self.start + stall["at_ms"] / 1000
            ends = begins + stall["ms"] / 1000
            stall["loop_wait_ms"] = round(self.waits.waited_ms(begins, ends), 1)
            stall["steal_ms"] = round(self.waits.stolen_ms(begins, ends), 1)

    def _loop_wait(self) -> float:
        """The longest a server's event loop waited for its core (% of the window). Workers
        share the server's core: a worker's loop also waits while another worker runs, at
        most that other's CPU time, which is taken off (what is left is the neighbours')."""
        cpu = sum(s.cpu_percent for s in self.servers)
        return max(max(0.0, s.main_wait_percent - (cpu - s.cpu_percent)) for s in self.servers)

    def run(
        self,
        server: str,
        index: int,
        report: dict[str, Any],
        args: argparse.Namespace,
        dashboard: dict[str, Any] | None = None,
    ) -> Run:
        s, g = self.servers, self.generator
        self._note_waits(report)
        run = Run(
            server,
            index,
            report,
            sum(x.cpu_percent for x in s),
            sum(x.rss_max for x in s),
            self._loop_wait(),
            g.cpu_percent,
            g.wait_percent,
        )
        if len(s) > 1:
            run.workers = [
                {"pid": x.pid, "cpu_percent": round(x.cpu_percent, 1), "rss_bytes": x.rss_max,
                 "loop_wait": round(x.main_wait_percent, 2)}
                for x in s
            ]  # fmt: skip
        run.dashboard = dashboard or {}
        run.problems = _problems(run, args)
        return run


class _ReportFetches:
    """One client fetching the HTML report (``GET /api/v1/report``) every ``every``
    seconds of the window, from its start, on a thread: when each was sent (seconds into
    the window), how long it took, its status and size."""

    def __init__(self, port: int, every: float, start: float, seconds: float) -> None:
        self.port, self.every, self.start, self.seconds = port, every, start, seconds
        self.fetches: list[dict[str, Any]] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _fetch(self) -> tuple[int, int]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            conn.request("GET", "/api/v1/report")
            response = conn.getresponse()
            return response.status, len(response.read())
        finally:
            conn.close()

    def _run(self) -> None:
        at = 0.0
        while at < self.seconds:
            time.sleep(max(0.0, self.start + at - time.time()))
            began = time.perf_counter()
            try:
                status, size = self._fetch()
            except (OSError, http.client.HTTPException):
                status, size = 0, 0
            took = (time.perf_counter() - began) * 1000
            self.fetches.append({"at": at, "ms": round(took, 1), "status": status, "bytes": size})
            at += self.every

    def result(self) -> list[dict[str, Any]]:
        self._thread.join(timeout=180)
        return self.fetches


def _dashboard(streams: HeldStreams | None, fetches: _ReportFetches | None) -> dict[str, Any]:
    """The window's dashboard figures (``Run.dashboard``), or none without streams and
    reports."""
    if streams is None and fetches is None:
        return {}
    return {
        "streams": 0 if streams is None else streams.count,
        "still_open": 0 if streams is None else streams.still_open,
        "report_every": 0 if fetches is None else fetches.every,
        "reports": [] if fetches is None else fetches.result(),
    }


def _problems(run: Run, args: argparse.Namespace) -> list[str]:
    """Why a window does not measure the server (the generator fell behind, or a
    neighbour took the server's core), if it does not."""
    problems = []
    report = run.report
    lag = report["send_lag"]
    if lag["p99_ms"] > args.max_lag_ms:
        problems.append(f"generator send lag p99 {lag['p99_ms']:.1f} ms > {args.max_lag_ms:g} ms")
    if run.server_wait > args.max_wait:
        problems.append(
            f"server loop waited for its core {run.server_wait:.1f} % of the window (busy machine)"
        )
    if report["errors"].get("unsent"):
        problems.append(f"{report['errors']['unsent']} polls never sent")
    if report["connected"] < report["vms"]:
        problems.append(f"only {report['connected']} of {report['vms']} VMs connected")
    board = run.dashboard
    if board and board["still_open"] != board["streams"]:
        problems.append(f"{board['still_open']} of {board['streams']} streams left open")
    failed = [f for f in board.get("reports", []) if f["status"] != 200]
    if failed:
        problems.append(f"{len(failed)} report fetches failed (status {failed[0]['status']})")
    return problems


def _gc_pauses(
    work: Path, index: int, pids: list[int], start: float, seconds: float
) -> dict[str, Any]:
    """The serving processes' collector pauses of 1 ms or more inside the window
    (bench/gcprobe; with workers each pause names its worker)."""
    pauses: list[dict[str, Any]] = []
    counts = [0, 0, 0]
    for pid in pids:
        path = work / f"gc{index}-{pid}.jsonl"
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        lines = [json.loads(line) for line in text.splitlines() if line]
        counts = [a + b for a, b in zip(counts, lines[0]["counts"], strict=True)]
        pauses += [
            {"at": round(p["at"] - start, 2), "generation": p["generation"],
             "ms": round(p["seconds"] * 1000, 1), **({"pid": pid} if len(pids) > 1 else {})}
            for p in lines[1:] if start <= p["at"] <= start + seconds
        ]  # fmt: skip
    return {"collections": counts, "pauses": pauses} if pauses or any(counts) else {}


def _profiler(pid: int, output: Path) -> subprocess.Popen[bytes]:
    """py-spy on ``pid`` until interrupted (SIGINT writes the profile)."""
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    fmt = {".json": "speedscope", ".txt": "raw"}.get(output.suffix, "flamegraph")
    command = [py_spy, "record", "--pid", str(pid), "--rate", "200", "--nonblocking",
               "--format", fmt, "-o", str(output)]  # fmt: skip
    if fmt == "speedscope":
        command.append("--idle")  # every sample, in time order: a timeline of the loop
    if os.geteuid() == 0 and shutil.which("chrt"):
        # Above the benchmark's own priority: a starved profiler drops samples silently.
        command = ["chrt", "--fifo", "20", *command]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL)


def _stop_profiler(spy: subprocess.Popen[bytes]) -> None:
    spy.send_signal(signal.SIGINT)
    spy.wait(timeout=120)


def _storage(
    args: argparse.Namespace, work: Path, index: int, stack: contextlib.ExitStack
) -> list[str]:
    """The server's storage options: a fresh SQLite file, or with ``--store`` a fresh
    PostgreSQL database (dropped once the block ends) and ``--workers``."""
    if args.store is None:
        for stale in work.glob(f"run{index}.db*"):  # a kept --workdir: start from nothing
            stale.unlink()
        return ["--db", str(work / f"run{index}.db")]
    from scaleout import database  # psycopg: only with --store

    url = stack.enter_context(database(args.store))
    return ["--store", url, *(["--workers", str(args.workers)] if args.workers > 1 else [])]


def _server_pids(args: argparse.Namespace, control_port: int, server_pid: int) -> list[int]:
    """The processes that serve: the server, or once every worker reported and one leads
    (with ``--store``), the workers, the leader first (``--profile`` records it; the
    parent only supervises)."""
    if args.store is None:
        return [server_pid]
    from scaleout import wait_for_cluster

    members = wait_for_cluster(f"http://127.0.0.1:{control_port}", args.workers)
    members.sort(key=lambda m: m["role"] != "leader")
    return [int(m["pid"]) for m in members] if args.workers > 1 else [server_pid]


def measure_forewarn(
    args: argparse.Namespace,
    binary: Path,
    work: Path,
    index: int,
    vms_file: Path,
    profile: Path | None = None,
) -> Run:
    """One window against ``forewarn serve`` with a rollout created during it (and
    dashboard streams open and reports fetched, when asked)."""
    fleet = work / "fleet.yaml"
    fleet.write_text(fleet_yaml(args.vms, args.avset), encoding="utf-8")
    imds_port, control_port = free_port(), free_port()
    log = work / f"forewarn{index}.log"
    env = forewarn_env(args.forewarn_src)
    for stale in work.glob(f"gc{index}-*.jsonl"):
        stale.unlink()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(GC_PROBE), env.get("PYTHONPATH")]))
    env["FOREWARN_BENCH_GC_LOG"] = str(work / f"gc{index}-{{pid}}.jsonl")  # one per process
    with contextlib.ExitStack() as stack:
        command = [
            sys.executable, "-m", "forewarn", "serve", "--fleet", str(fleet),
            *_storage(args, work, index, stack),
            "--imds-bind", f"127.0.0.1:{imds_port}",
            "--control-bind", f"127.0.0.1:{control_port}",
            "--time-scale", f"{args.time_scale:g}", "--enablement", args.enablement,
        ]  # fmt: skip
        server = stack.enter_context(
            start_server(command, [imds_port, control_port], log, env=env, priority=args.priority)
        )
        pids = _server_pids(args, control_port, server.pid)
        if not vms_file.exists():
            write_vms_file(vms_file, _vm_list(control_port, args.approve_every))
        # below the generator's priority, on its core: the generator stays ahead
        streams = (
            stack.enter_context(streams_held(control_port, args.streams)) if args.streams else None
        )
        spy = _profiler(pids[0], profile) if profile else None  # from before the first poll
        spy_started = time.time()
        gen = FleetgenRun.launch(
            binary, imds_port, vms_file, args.seconds, priority=args.generator_priority
        )
        window = _Window.begin(pids, gen)
        fetches = (
            _ReportFetches(control_port, args.report_every, gen.start, args.seconds)
            if args.report_every
            else None
        )
        gen.sleep_until(args.rollout_at)
        body = {"kind": "platform-reboot", "scope": AVSET}
        status, op, took = control_call(control_port, "POST", "/api/v1/operations", body)
        gen.sleep_until(args.seconds)
        window.end()
        if spy is not None:
            _stop_profiler(spy)
            print(f"profile: the window starts {gen.start - spy_started:.1f} s into it")
        report = gen.result()
        _, operations, _ = control_call(control_port, "GET", "/api/v1/operations")
        if fetches is not None:
            fetches.result()
    # the block's end let the streams go (counted), stopped the server, dropped the database
    rollout = {
        "status": status,
        "create_ms": round(took * 1000, 1),
        "batches_created": sum(1 for o in operations or [] if o.get("rollout_id")),
        "batches_started": sum(1 for o in operations or [] if o.get("started_at") is not None),
        "id": (op or {}).get("rollout_id"),
    }
    run = window.run("forewarn", index, report, args, _dashboard(streams, fetches))
    run.rollout = rollout
    run.gc = _gc_pauses(work, index, pids, gen.start, args.seconds)
    if status != 201:
        run.problems.append(f"creating the rollout answered {status}: {op}")
    if profile is not None:
        run.problems.append("profiled (py-spy)")
    return run


def measure_canned(
    args: argparse.Namespace, binary: Path, work: Path, index: int, vms_file: Path
) -> Run:
    """The same load against the canned-bytes asyncio server: as many processes as
    forewarn's ``--workers`` on the same core, sharing the port (SO_REUSEPORT), so that
    each front-end is compared with a canned server that shares its core the same way."""
    port = free_port()
    command = [sys.executable, "-c", BARE_SERVER, str(port)]
    if args.workers > 1:
        command.append("reuseport")
    with contextlib.ExitStack() as servers:
        logs = [work / f"canned{index}-{n}.log" for n in range(args.workers)]
        started = [start_server(command, [port], log, priority=args.priority) for log in logs]
        pids = [servers.enter_context(server).pid for server in started]
        gen = FleetgenRun.launch(
            binary, port, vms_file, args.seconds, priority=args.generator_priority
        )
        window = _Window.begin(pids, gen)
        gen.sleep_until(args.seconds)
        window.end()
        report = gen.result()
    return window.run("canned", index, report, args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vms", type=int, default=10000)
    parser.add_argument("--avset", type=int, default=200, help="VMs of the rolled-over set")
    parser.add_argument("--seconds", type=float, default=30.0, help="length of each window")
    parser.add_argument("--runs", type=int, default=3, help="pairs of forewarn/canned windows")
    parser.add_argument("--time-scale", type=float, default=60.0)
    parser.add_argument(
        "--enablement", choices=["on-first-request", "always"], default="on-first-request"
    )
    parser.add_argument(
        "--rollout-at",
        type=float,
        default=3.0,
        help="seconds into the window (at the default scale its first batch starts 15 s "
        "later and ends, the second batch created, 25 s later: inside a 30 s window)",
    )
    parser.add_argument("--approve-every", type=int, default=4, help="every Kth VM of the set")
    parser.add_argument(
        "--max-lag-ms",
        type=float,
        default=2.0,
        help="a run whose generator send lag p99 exceeds this is invalid",
    )
    parser.add_argument(
        "--max-wait",
        type=float,
        default=3.0,
        help="a run in which the server's event loop waited for its core "
        "more than this %% of the window is invalid",
    )
    parser.add_argument(
        "--streams",
        type=int,
        default=0,
        help="dashboard streams (GET /api/v1/stream) held open during each forewarn window",
    )
    parser.add_argument(
        "--report-every",
        type=float,
        default=0.0,
        metavar="S",
        help="fetch the HTML report (GET /api/v1/report) every S s of each forewarn window",
    )
    parser.add_argument(
        "--store",
        metavar="URL",
        help="serve from PostgreSQL: a fresh database per run, created (and dropped) on the "
        "server of this postgresql:// URL (e.g. postgresql://postgres@127.0.0.1:5432/postgres)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="forewarn serve --workers N (needs --store): connections spread by the kernel",
    )
    parser.add_argument("--only", choices=["forewarn", "canned"], help="measure one server")
    parser.add_argument("--profile", type=Path, help="py-spy one extra forewarn run into FILE")
    parser.add_argument("--json", type=Path, help="write every run's full report here")
    parser.add_argument(
        "--forewarn-src",
        type=Path,
        help="serve forewarn from this src directory (e.g. of `git archive COMMIT`)",
    )
    parser.add_argument(
        "--priority",
        choices=PRIORITIES,
        default="normal",
        help="run server and generator ahead of other work on a shared machine (root)",
    )
    parser.add_argument(
        "--generator-priority",
        choices=PRIORITIES,
        help="the generator's own priority (default: --priority's)",
    )
    parser.add_argument(
        "--store-cpu",
        type=int,
        default=SERVER_CPU,
        help=f"with --store, the CPU a PostgreSQL server of this machine is held on "
        f"(default {SERVER_CPU}, the server's; {LOAD_CPU}, the generator's, with "
        "--generator-priority realtime keeps it below the generator)",
    )
    parser.add_argument(
        "--workdir", type=Path, help="keep databases, server logs and the generator here"
    )
    args = parser.parse_args(argv)
    args.generator_priority = args.generator_priority or args.priority
    exit_on_sigterm()
    if not 0 < args.avset <= args.vms:
        parser.error("--avset must be between 1 and --vms")
    if args.seconds <= args.rollout_at:
        parser.error("--seconds must be longer than --rollout-at")
    if args.workers < 1 or (args.workers > 1 and args.store is None):
        parser.error("--workers N needs --store postgresql://...")
    if args.workers > 1 and args.priority == "realtime":
        # the supervisor and its workers, SCHED_FIFO on one core, starve each other at start
        parser.error("--workers N runs with --priority normal or high, not realtime")
    if args.streams < 0 or args.report_every < 0:
        parser.error("--streams and --report-every must not be negative")
    reason = go_missing_reason()
    if reason is not None:
        print(f"bench: {reason}", file=sys.stderr)
        return 2
    before = load_average()
    runs: list[Run] = []
    with contextlib.ExitStack() as stack:
        if args.workdir is not None:
            args.workdir.mkdir(parents=True, exist_ok=True)
            work = args.workdir.resolve()
        else:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="fleet-tail-")))
        binary = build_fleetgen(work)
        if args.store is not None:  # the store's processes off the generator's core
            from store_pinning import postgres_pinned  # psycopg: only with --store

            pinned = stack.enter_context(postgres_pinned(args.store, args.store_cpu))
            print(f"PostgreSQL: {len(pinned)} processes held on CPU {args.store_cpu}", flush=True)
        vms_file = work / "vms.txt"
        vms_file.unlink(missing_ok=True)
        if args.only == "canned":  # the same VM list forewarn would serve
            write_vms_file(
                vms_file,
                [(f"127.1.{i // 250}.{i % 250 + 1}", f"vm{i}", False) for i in range(args.vms)],
            )
        for index in range(1, args.runs + 1):
            order = ["forewarn", "canned"] if index % 2 else ["canned", "forewarn"]
            if args.only:
                order = [args.only]
            for server in order:
                measure = measure_forewarn if server == "forewarn" else measure_canned
                run = measure(args, binary, work, index, vms_file)
                runs.append(run)
                print(
                    f"run {index} {server}: p99 {run.latency('p99_ms'):.1f} ms, "
                    f"max {run.latency('max_ms'):.1f} ms, errors {run.errors}"
                    + ("" if run.valid else f" (invalid: {'; '.join(run.problems)})"),
                    flush=True,
                )
        if args.profile is not None:
            profiled = measure_forewarn(args, binary, work, 0, vms_file, args.profile.resolve())
            runs.append(profiled)  # shown as run 0, invalid: the profiler perturbs it
            print(f"profile written to {args.profile}")
    print_report(runs, args, (before, load_average()))
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in runs], indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
