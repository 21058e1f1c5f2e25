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
schedule (send lag p99 above ``--max-lag-ms``, polls left unsent, VMs not connected) is
marked invalid and counts for no target. ``--profile out.svg`` records one more forewarn
run with py-spy (``pip install py-spy``), outside the table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from imds_throughput import BARE_SERVER
from loadgen import (
    LOAD_CPU,
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
    pinned,
    start_server,
    write_vms_file,
)

__all__ = ["Run", "fleet_yaml", "main", "targets"]

AVSET = "avset"
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


def _profiler(pid: int, seconds: float, output: Path) -> subprocess.Popen[bytes]:
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    fmt = "speedscope" if output.suffix == ".json" else "flamegraph"
    command = [
        py_spy,
        "record",
        "--pid",
        str(pid),
        "--duration",
        f"{int(seconds)}",
        "--rate",
        "200",
        "--nonblocking",
        "--format",
        fmt,
        "--output",
        str(output),
    ]
    return subprocess.Popen(pinned(LOAD_CPU, command), stdout=subprocess.DEVNULL)


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
    with start_server(
        command, [imds_port, control_port], log, env=env, priority=args.priority
    ) as server:
        if not vms_file.exists():
            write_vms_file(vms_file, _vm_list(control_port, args.approve_every))
        gen = FleetgenRun.launch(binary, imds_port, vms_file, args.seconds, priority=args.priority)
        window = _Window.begin(server.pid, gen)
        spy = _profiler(server.pid, args.seconds, profile) if profile else None
        gen.sleep_until(args.rollout_at)
        body = {"kind": "platform-reboot", "scope": AVSET}
        status, op, took = control_call(control_port, "POST", "/api/v1/operations", body)
        gen.sleep_until(args.seconds)
        window.end()
        report = gen.result()
        if spy is not None:
            spy.wait()
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
    low, high = min(values), max(values)
    return fmt.format(low) if low == high else f"{fmt.format(low)}-{fmt.format(high)}"


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
    print("\nworst seconds of each forewarn run (second of the window: p99 / max):")
    for r in runs:
        if r.server == "forewarn":
            worst = ", ".join(
                f"{s['second']}s: {s['p99_ms']:.0f}/{s['max_ms']:.0f} ms"
                for s in r.report["worst_seconds"][:5]
            )
            print(f"  run {r.index}: {worst}")
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
    parser.add_argument("--rollout-at", type=float, default=5.0, help="seconds into the window")
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
    with tempfile.TemporaryDirectory(prefix="fleet-tail-") as tmp:
        work = Path(tmp)
        binary = build_fleetgen(work)
        vms_file = work / "vms.txt"
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
            measure_forewarn(args, binary, work, 0, vms_file, profile=args.profile.resolve())
            print(f"profile written to {args.profile}")
    print_report(runs, args, (before, load_average()))
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in runs], indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
