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
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from imds_throughput import BARE_SERVER
from loadgen import (
    PRIORITIES,
    FleetgenRun,
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

__all__ = ["Run", "fleet_yaml", "main", "targets"]

AVSET = "avset"
GC_PROBE = Path(__file__).resolve().parent / "gcprobe"
NOTICE, HOLD = 900.0, 600.0  # a platform reboot: 15 min notice, Started for 10 min
MIB = 1024 * 1024


@dataclass
class Run:
    """One measured window against one server."""

    server: str
    index: int
    report: dict[str, Any]
    cpu_percent: float
    rss_bytes: int
    server_wait: float  # % of the window the server's event loop waited for its core
    generator_cpu: float
    generator_wait: float  # summed over the generator's threads (they share one core)
    problems: list[str] = field(default_factory=list)
    rollout: dict[str, Any] = field(default_factory=dict)
    gc: dict[str, Any] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def errors(self) -> int:
        """Failed polls, non-200 answers and failed approvals."""
        report = self.report
        non200 = sum(int(n) for s, n in report["statuses"].items() if s != "200")
        approvals = report["approvals"]
        bad_approvals = int(approvals["errors"]) + sum(
            int(n) for s, n in approvals["statuses"].items() if s != "200"
        )
        return int(report["error_total"]) + non200 + bad_approvals

    def latency(self, key: str) -> float:
        return float(self.report["latency"][key])


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
    """The server's and the generator's /proc figures over one measured window."""

    server: ProcSampler
    generator: ProcSampler

    @classmethod
    def begin(cls, server_pid: int, gen: FleetgenRun) -> _Window:
        gen.sleep_until(0)
        window = cls(ProcSampler(server_pid), ProcSampler(gen.proc.pid))
        window.server.begin()
        window.generator.begin()
        return window

    def end(self) -> None:
        self.server.end()
        self.generator.end()

    def run(self, server: str, index: int, report: dict[str, Any], args: argparse.Namespace) -> Run:
        s, g = self.server, self.generator
        run = Run(
            server,
            index,
            report,
            s.cpu_percent,
            s.rss_max,
            s.main_wait_percent,
            g.cpu_percent,
            g.wait_percent,
        )
        run.problems = _problems(run, args)
        return run


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
    return problems


def _gc_pauses(path: Path, start: float, seconds: float) -> dict[str, Any]:
    """The server's collector pauses of 1 ms or more inside the window (bench/gcprobe)."""
    if not path.exists():
        return {}
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    pauses = [
        {"at": round(p["at"] - start, 2), "generation": p["generation"],
         "ms": round(p["seconds"] * 1000, 1)}
        for p in lines[1:] if start <= p["at"] <= start + seconds
    ]  # fmt: skip
    return {"collections": lines[0]["counts"] if lines else [], "pauses": pauses}


def _profiler(pid: int, output: Path) -> subprocess.Popen[bytes]:
    """py-spy on ``pid`` until interrupted (SIGINT writes the profile)."""
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    fmt = {".json": "speedscope", ".txt": "raw"}.get(output.suffix, "flamegraph")
    command = [py_spy, "record", "--pid", str(pid), "--rate", "200", "--nonblocking",
               "--format", fmt, "-o", str(output)]  # fmt: skip
    if fmt == "speedscope":
        command.append("--idle")  # every sample, in time order: a timeline of the loop
    # Above the benchmark's own priority: a starved profiler drops samples silently.
    return subprocess.Popen(["chrt", "--fifo", "20", *command], stdout=subprocess.DEVNULL)


def _stop_profiler(spy: subprocess.Popen[bytes]) -> None:
    spy.send_signal(signal.SIGINT)
    spy.wait(timeout=120)


def measure_forewarn(
    args: argparse.Namespace,
    binary: Path,
    work: Path,
    index: int,
    vms_file: Path,
    profile: Path | None = None,
) -> Run:
    """One window against ``forewarn serve`` with a rollout created during it."""
    fleet = work / "fleet.yaml"
    fleet.write_text(fleet_yaml(args.vms, args.avset), encoding="utf-8")
    for stale in work.glob(f"run{index}.db*"):  # a kept --workdir: start from nothing
        stale.unlink()
    imds_port, control_port = free_port(), free_port()
    command = [
        sys.executable,
        "-m",
        "forewarn",
        "serve",
        "--fleet",
        str(fleet),
        "--db",
        str(work / f"run{index}.db"),
        "--imds-bind",
        f"127.0.0.1:{imds_port}",
        "--control-bind",
        f"127.0.0.1:{control_port}",
        "--time-scale",
        f"{args.time_scale:g}",
        "--enablement",
        args.enablement,
    ]
    log = work / f"forewarn{index}.log"
    env = forewarn_env(args.forewarn_src)
    gc_log = work / f"gc{index}.jsonl"
    gc_log.unlink(missing_ok=True)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(GC_PROBE), env.get("PYTHONPATH")]))
    env["FOREWARN_BENCH_GC_LOG"] = str(gc_log)
    with start_server(
        command, [imds_port, control_port], log, env=env, priority=args.priority
    ) as server:
        if not vms_file.exists():
            write_vms_file(vms_file, _vm_list(control_port, args.approve_every))
        spy = _profiler(server.pid, profile) if profile else None  # from before the first poll
        spy_started = time.time()
        gen = FleetgenRun.launch(binary, imds_port, vms_file, args.seconds, priority=args.priority)
        window = _Window.begin(server.pid, gen)
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
    rollout = {
        "status": status,
        "create_ms": round(took * 1000, 1),
        "batches_created": sum(1 for o in operations or [] if o.get("rollout_id")),
        "batches_started": sum(1 for o in operations or [] if o.get("started_at") is not None),
        "id": (op or {}).get("rollout_id"),
    }
    run = window.run("forewarn", index, report, args)
    run.rollout = rollout
    run.gc = _gc_pauses(gc_log, gen.start, args.seconds)
    if status != 201:
        run.problems.append(f"creating the rollout answered {status}: {op}")
    if profile is not None:
        run.problems.append("profiled (py-spy)")
    return run


def measure_canned(
    args: argparse.Namespace, binary: Path, work: Path, index: int, vms_file: Path
) -> Run:
    """The same load against the canned-bytes asyncio server."""
    port = free_port()
    command = [sys.executable, "-c", BARE_SERVER, str(port)]
    with start_server(
        command, [port], work / f"canned{index}.log", priority=args.priority
    ) as server:
        gen = FleetgenRun.launch(binary, port, vms_file, args.seconds, priority=args.priority)
        window = _Window.begin(server.pid, gen)
        gen.sleep_until(args.seconds)
        window.end()
        report = gen.result()
    return window.run("canned", index, report, args)


def _span(values: list[float], fmt: str = "{:.1f}") -> str:
    if not values:
        return "n/a"
    low, high = fmt.format(min(values)), fmt.format(max(values))
    return low if low == high else f"{low}-{high}"


def targets(runs: list[Run]) -> list[tuple[str, str, str]]:
    """(target, measured, PASS/MISS/n/a) for every target of the issue, from valid runs."""
    ours = [r for r in runs if r.server == "forewarn" and r.valid]
    canned = {r.index: r for r in runs if r.server == "canned" and r.valid}
    pairs = [(r, canned[r.index]) for r in ours if r.index in canned]
    p99 = [r.latency("p99_ms") / max(c.latency("p99_ms"), 1e-3) for r, c in pairs]
    p999 = [r.latency("p99_9_ms") / max(c.latency("p99_9_ms"), 1e-3) for r, c in pairs]
    rows: list[tuple[str, list[float], float, str]] = [
        ("errors = 0", [float(r.errors) for r in ours], 0.0, "{:.0f}"),
        ("p99 <= 2 x canned (same run)", p99, 2.0, "{:.2f}"),
        ("p99.9 <= 3 x canned (same run)", p999, 3.0, "{:.2f}"),
        ("max <= 50 ms", [r.latency("max_ms") for r in ours], 50.0, "{:.1f} ms"),
        ("CPU <= 50 % of one core", [r.cpu_percent for r in ours], 50.0, "{:.0f} %"),
        ("RSS <= 200 MB", [r.rss_bytes / 1e6 for r in ours], 200.0, "{:.0f} MB"),
    ]
    out = []
    for name, values, limit, fmt in rows:
        verdict = "n/a" if not values else ("PASS" if max(values) <= limit else "MISS")
        out.append((name, _span(values, fmt), verdict))
    return out


def print_report(runs: list[Run], args: argparse.Namespace, load: tuple[str, str]) -> None:
    print(
        f"\n{args.vms} VMs at 1 Hz, {args.seconds:g} s windows, rollout of {args.avset}-VM "
        f"{AVSET} at +{args.rollout_at:g} s, time scale {args.time_scale:g}, "
        f"enablement {args.enablement}, priority {args.priority}; "
        f"load average before {load[0]}, after {load[1]}"
    )
    starts = args.rollout_at + NOTICE / args.time_scale
    ends = starts + HOLD / args.time_scale
    print(
        f"in each forewarn window: rollout created at +{args.rollout_at:g} s, its first batch "
        f"starts at +{starts:g} s (unless all approve), ends and the second batch is created "
        f"at +{ends:g} s; then the VMs of the second batch approve"
    )
    head = (
        f"{'run':>3} {'server':9} {'errors':>6} {'p50':>7} {'p99':>7} {'p99.9':>7} "
        f"{'max':>7} {'CPU':>5} {'RSS':>8} {'rate':>7} {'lag p99':>8} {'lag max':>8} "
        f"{'wait':>5}  note"
    )
    print(head)
    for r in runs:
        lat, lag = r.report["latency"], r.report["send_lag"]
        note = "; ".join(r.problems) if r.problems else "ok"
        if r.rollout:
            note += (
                f"; rollout {r.rollout['create_ms']:.0f} ms to create, "
                f"{r.rollout['batches_started']}/{r.rollout['batches_created']} batches "
                f"started, {r.report['approvals']['sent']} approvals"
            )
        print(
            f"{r.index:>3} {r.server:9} {r.errors:>6} {lat['p50_ms']:>5.1f}ms "
            f"{lat['p99_ms']:>5.1f}ms {lat['p99_9_ms']:>5.1f}ms {lat['max_ms']:>5.1f}ms "
            f"{r.cpu_percent:>4.0f}% {r.rss_bytes / MIB:>5.0f}MiB "
            f"{r.report['achieved_rate']:>7.0f} {lag['p99_ms']:>6.2f}ms {lag['max_ms']:>6.1f}ms"
            f" {r.server_wait:>4.1f}%  {note}"
        )
    print("\nstalls of each forewarn run (polls that finished late together; "
          "start in the window: longest ms / polls):")  # fmt: skip
    for r in runs:
        if r.server == "forewarn":
            stalls = ", ".join(f"{st['at_ms'] / 1000:.1f}s: {st['ms']:.0f}/{st['requests']}"
                               for st in (r.report.get("stalls") or [])[:6])  # fmt: skip
            print(f"  run {r.index}: {stalls or 'none over 10 ms'}")
    print("\ncollector pauses >= 1 ms in each forewarn window (second: generation/ms):")
    for r in runs:
        if r.server == "forewarn" and r.gc:
            pauses = sorted(r.gc["pauses"], key=lambda p: -p["ms"])
            longest = ", ".join(f"{p['at']:.1f}s: gen{p['generation']}/{p['ms']:.0f}"
                                for p in pauses[:5])  # fmt: skip
            print(f"  run {r.index}: {len(pauses)} pauses, {sum(p['ms'] for p in pauses):.0f} ms "
                  f"in all; longest {longest or '-'}")  # fmt: skip
    canned = {r.index: r for r in runs if r.server == "canned"}
    pairs = [(r, canned[r.index]) for r in runs if r.server == "forewarn" and r.index in canned]
    if pairs:
        print("\nforewarn / canned, same run:")
    for ours, base in pairs:
        p99 = ours.latency("p99_ms") / max(base.latency("p99_ms"), 1e-3)
        p999 = ours.latency("p99_9_ms") / max(base.latency("p99_9_ms"), 1e-3)
        valid = "" if ours.valid and base.valid else "  (invalid pair)"
        print(f"  run {ours.index}: p99 x{p99:.1f}, p99.9 x{p999:.1f}{valid}")
    print("\ntarget (issue 5)                        measured        verdict")
    for name, measured, verdict in targets(runs):
        print(f"  {name:36s}  {measured:14s}  {verdict}")


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
        "--workdir", type=Path, help="keep databases, server logs and the generator here"
    )
    args = parser.parse_args(argv)
    exit_on_sigterm()
    if not 0 < args.avset <= args.vms:
        parser.error("--avset must be between 1 and --vms")
    if args.seconds <= args.rollout_at:
        parser.error("--seconds must be longer than --rollout-at")
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
