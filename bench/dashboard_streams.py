"""Open dashboard streams against the VMs' latency: the metadata endpoint and the control
plane share one event loop, so an operator's browsers must not cost the VMs (issue 16).

One command:

    python bench/dashboard_streams.py [--streams 300] [--seconds 20] [--changes 10]
                                      [--rounds 1] [--source SRC] [--json FILE]
                                      [--profile FILE] [--priority normal|high|realtime]

A real ``forewarn serve`` of the shipped 1,000-VM fleet (pinned to CPU 0 when taskset
exists). Timed VMs (``--vms``, each from its own address, keep-alive) poll their document
once a second, staggered, while operations are triggered through the control API at
``--changes`` a second (user reboots round robin over the fleet; each makes an event and,
later, its start and end). The same run is timed twice: with no dashboard stream open,
then with ``--streams`` open ones (a child process, pinned to CPU 1, reads them all);
``--rounds N`` repeats the pair N times on the same server, and the polls of the valid
windows of each kind are pooled. It prints the polls' p50/p99 of each and the ratio; the
goal is a ratio near 1.

Each window also reports the server's CPU (% of one core) and how long its event loop's
thread waited for its core (run-queue wait, % of the window): what the streams cost the
server in CPU, and how much of the window measured the machine's other load instead (a
window whose loop waited more than ``MAX_WAIT_PERCENT`` is flagged); a poll during which
the server's loop or the timed VMs waited for a core more than ``DISTURBED_MS`` is counted
apart, and the summary pools every window's undisturbed polls of each kind.
On a shared machine ``--priority realtime`` (root) runs the server, the stream reader and
the timed VMs under SCHED_FIFO (the timed VMs above the reader, on the reader's core).
``--profile out.txt`` records the server with py-spy during the streams' window.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loadgen import (
    LOAD_CPU,
    PRIORITIES,
    LoopWaits,
    ProcSampler,
    control_call,
    exit_on_sigterm,
    forewarn_env,
    free_port,
    load_average,
    pinned,
    prioritised,
    start_server,
)

FLEET = Path(__file__).resolve().parents[1] / "src/forewarn/fleet/fleets/thousand.yaml"
TARGET = b"/metadata/scheduledevents?api-version=2020-07-01"
#: A window whose loop waited longer for its core (% of the window) measured the neighbours.
MAX_WAIT_PERCENT = 3.0
#: A poll during which the server's loop or the timed VMs waited longer for a core (ms).
DISTURBED_MS = 1.0
#: How long every dashboard stream has to send its snapshot.
STREAMS_OPEN_SECONDS = 120.0
REQUEST = b"GET " + TARGET + b" HTTP/1.1\r\nHost: 169.254.169.254\r\nMetadata: true\r\n\r\n"


def vm_address(position: int) -> str:
    """The automatic address of the VM at ``position`` of the fleet (README: The fleet)."""
    return f"127.1.{position // 250}.{position % 250 + 1}"


async def read_response(reader: asyncio.StreamReader) -> int:
    """Read one response (framed by content-length); its status."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            await reader.readexactly(int(line.split(b":", 1)[1]))
    return status


async def poll_vm(
    port: int, position: int, offset: float, until: float, out: list[tuple[float, float]]
) -> int:
    """Poll as the VM at ``position`` once a second until ``until``; append each poll's
    (start, end) in ``time.monotonic`` seconds to ``out``; returns the number of failed
    polls."""
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, local_addr=(vm_address(position), 0)
    )
    failures = 0
    loop = asyncio.get_running_loop()
    next_at = loop.time() + offset
    try:
        while next_at < until:
            await asyncio.sleep(max(0.0, next_at - loop.time()))
            next_at += 1.0
            started = time.monotonic()
            writer.write(REQUEST)
            status = await read_response(reader)
            out.append((started, time.monotonic()))
            failures += status != 200
    finally:
        writer.close()
    return failures


async def drive_changes(port: int, names: list[str], rate: float, until: float) -> list[int]:
    """Trigger a user reboot ``rate`` times a second, round robin over ``names``."""
    loop = asyncio.get_running_loop()
    statuses: list[int] = []
    next_at = loop.time()
    i = 0
    while next_at < until:
        await asyncio.sleep(max(0.0, next_at - loop.time()))
        next_at += 1.0 / rate
        body = {"kind": "user-reboot", "vms": [names[i % len(names)]]}
        i += 1
        status, _, _ = await asyncio.to_thread(
            control_call, port, "POST", "/api/v1/operations", body
        )
        statuses.append(status)
    return statuses


async def timed_window(
    args: argparse.Namespace, imds: int, control: int, window: int, server: int
) -> dict[str, Any]:
    """One window: its timed VMs polling, operations at the change rate on VMs of its own
    (a VM with an event pending would refuse another: 409, and fewer changes)."""
    loop = asyncio.get_running_loop()
    until = loop.time() + args.seconds
    names = [vm["name"] for vm in control_call(control, "GET", "/api/v1/vms")[1]]
    spans: list[tuple[float, float]] = []
    polls = [poll_vm(imds, i, i / args.vms, until, spans) for i in range(args.vms)]
    per_window = int(args.changes * args.seconds) + 1
    first_target = args.vms + window * per_window
    targets = names[first_target : first_target + per_window]
    if len(targets) < per_window:
        raise SystemExit(f"the fleet is too small for {per_window} operations a window")
    changes = drive_changes(control, targets, args.changes, until)
    sampler = ProcSampler(server)
    sampler.begin()
    # Either loop: the server's, or this process's, which times the VMs' polls.
    with LoopWaits([server, os.getpid()], every=0.002, clock=time.monotonic) as watch:
        failures, statuses = await asyncio.gather(asyncio.gather(*polls), changes)
    sampler.end()
    latencies = [(end - start) * 1000 for start, end in spans]
    clean = [(end - start) * 1000 for start, end in spans
             if watch.waited_ms(start, end) <= DISTURBED_MS]  # fmt: skip
    return {
        **summary(latencies),
        "undisturbed": summary(clean),
        "disturbed_polls": len(latencies) - len(clean),
        "failed_polls": sum(failures),
        "operations": {str(s): statuses.count(s) for s in sorted(set(statuses))},
        "server_cpu_percent": round(sampler.cpu_percent, 1),
        "loop_wait_percent": round(sampler.main_wait_percent, 1),
        "valid": sampler.main_wait_percent <= MAX_WAIT_PERCENT,
        "latencies_ms": [round(x, 3) for x in clean],
    }


def summary(latencies: list[float]) -> dict[str, Any]:
    """Percentiles of polls' latencies (ms)."""
    cuts = statistics.quantiles(latencies, n=100)
    return {
        "polls": len(latencies),
        "p50_ms": round(cuts[49], 2),
        "p99_ms": round(cuts[98], 2),
        "max_ms": round(max(latencies), 2),
    }


# ------------------------------------------------------------------ the streams' child


async def hold_streams(port: int, count: int) -> None:
    """Open ``count`` dashboard streams, say ``open`` once each has its snapshot, then
    read and discard everything until stdin closes; then say how many were still open."""
    ready = asyncio.Event()
    started = live = 0

    async def one() -> None:
        nonlocal started, live
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /api/v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await reader.readuntil(b"event: snapshot")
        started += 1
        live += 1
        if started == count:
            ready.set()
        try:
            while await reader.read(65536):
                pass
        finally:
            live -= 1

    tasks = [asyncio.create_task(one()) for _ in range(count)]
    await asyncio.wait_for(ready.wait(), STREAMS_OPEN_SECONDS)  # else exit: the parent fails
    print("open", flush=True)
    await asyncio.to_thread(sys.stdin.read)
    print(f"still {live}", flush=True)
    for task in tasks:
        task.cancel()


@dataclass
class HeldStreams:
    """Dashboard streams a child process holds open; ``still_open``: how many of them
    had not ended when they were let go (None until then)."""

    count: int
    still_open: int | None = None


@contextlib.contextmanager
def streams_held(port: int, count: int, priority: str = "normal") -> Iterator[HeldStreams]:
    """``count`` dashboard streams of the control API on ``port``, read continuously (as
    a browser would) by a child process on the load CPU, from their snapshots until the
    block ends."""
    child = subprocess.Popen(
        prioritised(priority, pinned(LOAD_CPU, [
            sys.executable, __file__, "--hold-streams", str(count), "--port", str(port)])),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=forewarn_env(None),
    )  # fmt: skip
    held = HeldStreams(count)
    assert child.stdout is not None and child.stdin is not None
    try:
        if child.stdout.readline().strip() != "open":
            raise RuntimeError("the dashboard streams did not open")
        yield held
    finally:
        child.stdin.close()
        last = child.stdout.readline().split()
        if last[:1] == ["still"]:
            held.still_open = int(last[1])
        child.wait(timeout=30)


# ------------------------------------------------------------------------------- main


def watched_window(
    args: argparse.Namespace, imds: int, control: int, window: int, pid: int
) -> dict[str, Any]:
    """A window with ``--streams`` dashboard streams open (py-spy on the first one)."""
    with streams_held(control, args.streams, args.priority):
        profile = args.profile if window == 1 else None
        spy = start_profiler(pid, profile) if profile else None
        watched = asyncio.run(timed_window(args, imds, control, window, pid))
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(timeout=120)
        return watched


def window_line(window: dict[str, Any]) -> str:
    label = f"{window['streams']} streams" if window["streams"] else "no streams"
    return (
        f"{label:>12}: p50 {window['p50_ms']:7.2f} ms  p99 {window['p99_ms']:7.2f} ms  "
        f"max {window['max_ms']:7.2f} ms  ({window['polls']} polls, "
        f"{window['failed_polls']} failed; operations {window['operations']}); "
        f"server CPU {window['server_cpu_percent']:.1f} %, loop waited for its core "
        f"{window['loop_wait_percent']:.1f} %"
        + ("" if window["valid"] else " INVALID")
        + f"\n{'':>12}  undisturbed p50 {window['undisturbed']['p50_ms']:7.2f} ms  "
        f"p99 {window['undisturbed']['p99_ms']:7.2f} ms  max "
        f"{window['undisturbed']['max_ms']:7.2f} ms ({window['disturbed_polls']} polls "
        f"disturbed: a loop waited > {DISTURBED_MS:g} ms for its core)"
    )


def run_ahead(priority: str) -> None:
    """The timed VMs (this process) ahead of the machine's other work, and with
    ``realtime`` on the reader's core above the reader: never on the server's."""
    if priority == "high":
        os.nice(-20)
    elif priority == "realtime":
        os.sched_setaffinity(0, {LOAD_CPU} & os.sched_getaffinity(0) or os.sched_getaffinity(0))
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(11))


def start_profiler(pid: int, output: Path) -> subprocess.Popen[bytes]:
    """py-spy on ``pid`` until SIGINT (``.txt``: collapsed stacks; else a flame graph)."""
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    fmt = "raw" if output.suffix == ".txt" else "flamegraph"
    command = [py_spy, "record", "--pid", str(pid), "--rate", "250", "--nonblocking",
               "--format", fmt, "-o", str(output)]  # fmt: skip
    if os.geteuid() == 0 and shutil.which("chrt"):
        command = ["chrt", "--fifo", "20", *command]  # a starved profiler drops samples
    return subprocess.Popen(command, stdout=subprocess.DEVNULL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=20.0, help="per window")
    parser.add_argument("--changes", type=float, default=10.0, help="operations a second")
    parser.add_argument("--vms", type=int, default=20, help="timed VMs, each once a second")
    parser.add_argument("--rounds", type=int, default=1, help="pairs of windows")
    parser.add_argument("--fleet", type=Path, default=FLEET)
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--priority", choices=PRIORITIES, default="normal")
    parser.add_argument("--profile", type=Path, help="py-spy the server's streams window")
    parser.add_argument(
        "--source", type=Path, help="serve this src directory (e.g. of git archive COMMIT)"
    )
    parser.add_argument("--hold-streams", type=int, help=argparse.SUPPRESS)  # the child
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.hold_streams is not None:
        asyncio.run(hold_streams(args.port, args.hold_streams))
        return 0
    exit_on_sigterm()
    run_ahead(args.priority)
    imds, control = free_port(), free_port()
    with tempfile.TemporaryDirectory() as tmp:
        command = [
            sys.executable, "-m", "forewarn", "serve", "--fleet", str(args.fleet),
            "--db", os.path.join(tmp, "bench.db"), "--time-scale", "60",
            "--enablement", "always", "--imds-bind", f"127.0.0.1:{imds}",
            "--control-bind", f"127.0.0.1:{control}", "--rate-limit", "0",
        ]  # fmt: skip
        log = Path(tmp) / "server.log"
        env = forewarn_env(args.source)
        with start_server(command, [imds, control], log, env=env, priority=args.priority) as server:
            windows: list[dict[str, Any]] = []
            for pair in range(args.rounds):
                quiet = asyncio.run(timed_window(args, imds, control, 2 * pair, server.pid))
                watched = watched_window(args, imds, control, 2 * pair + 1, server.pid)
                windows += [{"streams": 0, **quiet}, {"streams": args.streams, **watched}]
                for window in windows[-2:]:
                    print(window_line(window), flush=True)
    pooled = {  # every window's undisturbed polls (a disturbed one measured the neighbours)
        kind: summary([x for w in windows if bool(w["streams"]) == streams
                       for x in w["latencies_ms"]] or [0.0, 0.0])
        for kind, streams in (("no_streams", False), ("with_streams", True))
    }  # fmt: skip
    quiet, watched = pooled["no_streams"], pooled["with_streams"]
    results = {
        "streams": args.streams, "seconds": args.seconds, "changes_per_second": args.changes,
        "timed_vms": args.vms, "rounds": args.rounds, **pooled,
        "p50_ratio": round(watched["p50_ms"] / max(quiet["p50_ms"], 1e-9), 2),
        "p99_ratio": round(watched["p99_ms"] / max(quiet["p99_ms"], 1e-9), 2),
        "load_average": load_average(), "priority": args.priority, "windows": windows,
    }  # fmt: skip
    print(
        f"undisturbed polls pooled ({quiet['polls']} without, {watched['polls']} with streams): "
        f"p50 {quiet['p50_ms']:.2f} -> {watched['p50_ms']:.2f} ms, "
        f"p99 {quiet['p99_ms']:.2f} -> {watched['p99_ms']:.2f} ms; "
        f"ratio p50 {results['p50_ratio']:.2f}, p99 {results['p99_ratio']:.2f}; "
        f"{args.changes:g} operations/s, {args.vms} timed VMs once a second, "
        f"{args.seconds:g} s a window; priority {args.priority}; "
        f"load average {results['load_average']}"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
