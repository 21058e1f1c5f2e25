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
from dataclasses import asdict, dataclass
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
    if os.geteuid() == 0 and shutil.which("chrt"):
        # Above the benchmark's own priority: a starved profiler drops samples silently.
        command = ["chrt", "--fifo", "20", *command]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL)


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
