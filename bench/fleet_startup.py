"""How long a big fleet takes to be ready after a restart, and how much memory it holds.

For a tiny fleet (one VM: the fixed cost of starting Python, importing and binding, the
baseline of this run), 10,000 and 100,000 VMs (``--sizes``; up to 999,999, a fleet's most
with the default VM): create the database once with
``forewarn serve --fleet``, then restart the server several times with only ``--db`` (the
fleet comes from the database, as after any restart) and time each from process start
until the metadata endpoint answers 200. It prints the best and worst time, the time
above the baseline, the CPU time the server's banner says it took after the interpreter's
start and imports (``ready in``: what grows with the fleet, without the tens of
milliseconds the imports move by from one start to the next, which drowned what 100,000
VMs add), and the resident memory once ready; then each size against the smaller
ones: how many times the cost above the baseline for how many times the VMs (goals, issue
39: ready in <= 3 s up to 1,000,000 VMs, ten times the VMs at most 10.5 times the cost, a
first start in <= 10 s, at most 1 KB per VM).

    python bench/fleet_startup.py [--runs 5] [--sizes 10000,100000] [--profile]
                                  [--priority normal|high|realtime] [--forewarn-src DIR]

On a shared machine, neighbours' work shows up as startup time: ``--priority high`` (nice
-20) or ``realtime`` (SCHED_FIFO; both need root) runs this script and the servers it starts
ahead of them; the CPU time column is the least affected either way. ``--forewarn-src``
serves another tree (the ``src`` of ``git archive COMMIT``) to compare.

``--profile`` also runs one restart of the largest fleet under cProfile and prints where
its startup goes (the process is slower under the profiler: read the shares, not the
seconds).
"""

from __future__ import annotations

import argparse
import http.client
import os
import pstats
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

PATH = "/metadata/scheduledevents?api-version=2020-07-01"
GOAL_SECONDS = 3.0
GOAL_VMS = 100_000  # the 3 s goal holds from here up (issue 39: up to 1,000,000)
#: Ten times the VMs costs at most this many times as much above the baseline.
GOAL_RATIO = 10.5
#: The first start (the fleet file into the database) of the biggest fleets.
FIRST_GOAL_SECONDS = 10.0
FIRST_GOAL_VMS = 999_999
GOAL_KB_PER_VM = 1.0


def fleet_yaml(vms: int) -> str:
    """A fleet of ``vms`` VMs plus the default VM: half a scale set in placement groups of
    100, half availability sets of 100 VMs (5 update domains); ``vms=0`` is one VM."""
    lines = ["default_vm: bench", "scopes:", "  - {kind: standalone, name: bench}"]
    if vms:
        half = vms // 2
        groups = max(1, half // 100)
        lines.append(f"  - {{kind: scale_set, name: big, vms: {half}, placement_groups: {groups}}}")
        rest = vms - half
        for k in range(0, rest, 100):
            count = min(100, rest - k)
            lines.append(
                f"  - {{kind: availability_set, name: as{k // 100}, vms: {count}, "
                "update_domains: 5, fault_domains: 3}"
            )
    return "\n".join(lines) + "\n"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server and wait for it (SIGKILL after a minute)."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def answers(port: int) -> bool:
    """Whether the endpoint answers a VM's request with 200 now."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        conn.request("GET", PATH, headers={"Metadata": "true"})
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def control_answers(port: int) -> bool:
    """Whether the control API answers (its clock) with 200 now."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/api/v1/clock")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


@contextmanager
def virtual_server(
    fleet: Path, db: Path, *, timeout: float = 300.0
) -> Iterator[tuple[subprocess.Popen[bytes], int, int]]:
    """``forewarn serve`` of ``fleet`` on a virtual clock, every scope enabled and no rate
    limit, until both its endpoint and its control API answer: (process, endpoint port,
    control port); stopped on the way out."""
    imds, control = free_port(), free_port()
    command = [
        sys.executable, "-m", "forewarn", "serve", "--db", str(db), "--fleet", str(fleet),
        "--clock", "virtual", "--enablement", "always", "--rate-limit", "0",
        "--imds-bind", f"127.0.0.1:{imds}", "--control-bind", f"127.0.0.1:{control}",
    ]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    try:
        began = time.perf_counter()
        while not (answers(imds) and control_answers(control)):
            if proc.poll() is not None or time.perf_counter() - began > timeout:
                raise RuntimeError(f"the server of {fleet} did not start")
            time.sleep(0.05)
        yield proc, imds, control
    finally:
        stop(proc)


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` in MB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time ``pid`` has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_ns(pid: int) -> int:
    """CPU time (ns) of every live thread of ``pid`` so far (``/proc/PID/task/*/schedstat``:
    the scheduler's own count, in nanoseconds, where ``/proc/PID/stat`` counts clock ticks
    of 10 ms, as coarse as what 100,000 VMs add to a start)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):  # a thread that just ended
            continue
    return total


@dataclass
class Start:
    seconds: float
    cpu: float  # the server's CPU time until ready: what a busy machine inflates least
    rss_mb: float
    #: the CPU time the server's banner says it took after the interpreter's start and
    #: imports (``ready in``): the part that grows with the fleet, without the imports'
    #: noise
    in_command: float


#: The banner's line of how long the command took to be ready.
READY = re.compile(r"^forewarn: ready in [0-9.]+ s, ([0-9.]+) s of CPU")


def said_ready(proc: subprocess.Popen[bytes], timeout: float) -> float:
    """The CPU seconds the server's banner says it took to be ready (it prints the line
    as the endpoint starts answering: read until it comes)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline().decode()
        if not line:
            break
        if found := READY.match(line):
            return float(found.group(1))
    raise RuntimeError("the server's banner said no 'ready in' (an older tree?)")


ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


def prioritise(priority: str) -> None:
    """Run this process, and so every server it starts, ahead of the machine's other work."""
    if priority == "high":
        os.nice(-20)
    elif priority == "realtime":
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))


def start_once(directory: Path, extra: list[str], *, timeout: float = 120.0) -> Start:
    """Start ``forewarn serve``, time it until the endpoint answers, stop it again."""
    imds, control = free_port(), free_port()
    command = [
        sys.executable, "-m", "forewarn", "serve", "--db", str(directory / "fleet.db"),
        "--imds-bind", f"127.0.0.1:{imds}", "--control-bind", f"127.0.0.1:{control}", *extra,
    ]  # fmt: skip
    began = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    try:
        while not answers(imds):
            if proc.poll() is not None:
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise RuntimeError(f"server exited with {proc.returncode}:\n{err}")
            if time.perf_counter() - began > timeout:
                raise RuntimeError(f"server not ready after {timeout} s")
            time.sleep(0.005)
        ready = time.perf_counter() - began
        cpu, rss = cpu_ns(proc.pid) / 1e9, rss_mb(proc.pid)
        return Start(ready, cpu, rss, said_ready(proc, timeout))
    finally:
        stop(proc)


def measure(root: Path, vms: int, runs: int) -> tuple[Start, list[Start]]:
    """The first start (creates the database) and ``runs`` restarts of one fleet."""
    directory = root / f"fleet-{vms}"
    directory.mkdir()
    fleet = directory / "fleet.yaml"
    fleet.write_text(fleet_yaml(vms), encoding="utf-8")
    first = start_once(directory, ["--fleet", str(fleet)])
    return first, [start_once(directory, []) for _ in range(runs)]


def profile_restart(root: Path, vms: int) -> None:
    """One restart of the ``vms`` fleet under cProfile: the startup's biggest costs."""
    directory = root / f"fleet-{vms}"
    out = root / "startup.prof"
    imds, control = free_port(), free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "forewarn", "serve",
         "--db", str(directory / "fleet.db"), "--imds-bind", f"127.0.0.1:{imds}",
         "--control-bind", f"127.0.0.1:{control}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV,
    )  # fmt: skip
    began = time.perf_counter()
    while not answers(imds):
        if proc.poll() is not None or time.perf_counter() - began > 300:
            raise RuntimeError("profiled server did not start")
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)
    stats = pstats.Stats(str(out))
    total = max(
        (row[3] for func, row in stats.stats.items() if func[2] == "<module>"),  # type: ignore[attr-defined]
        default=1.0,
    )
    print(f"\nwhere a restart of {vms:,} VMs goes (cProfile, cumulative, share of the run):")
    rows = sorted(
        (
            (row[3], f"{Path(func[0]).parent.name}/{Path(func[0]).name}:{func[2]}")
            for func, row in stats.stats.items()  # type: ignore[attr-defined]
            if "forewarn" in func[0] and func[2] not in ("<module>", "<lambda>")
        ),
        reverse=True,
    )
    for seconds, name in rows[:18]:
        print(f"  {seconds:7.3f} s  {100 * seconds / total:5.1f} %  {name}")


def print_ratios(rows: list[tuple[int, float, float, float, float]]) -> int:
    """Each size against every smaller one of the run: the cost above the baseline (wall,
    CPU, and the server's own CPU time until ``ready``, which leaves out the interpreter's start and
    the imports and their noise: the goal's figure) grows by how much for how many more
    VMs; memory per VM. 1 if a goal missed."""
    verdict = 0
    if rows:
        print("each size against the smaller ones (cost above the 1-VM baseline):")
    for k, (vms, wall, cpu, said, rss) in enumerate(rows):
        per_vm = 1024 * rss / vms  # KB per VM above the baseline's RSS
        ok = per_vm <= GOAL_KB_PER_VM
        verdict |= 0 if ok else 1
        print(f"{vms:>12,} VMs: {per_vm:.2f} KB per VM (goal <= {GOAL_KB_PER_VM:g}: "
              f"{'OK' if ok else 'MISSED'})")  # fmt: skip
        for small, small_wall, small_cpu, small_said, _ in rows[:k]:
            times = vms / small
            # a smaller size that cost nothing above the baseline (noise) gives no ratio
            wall_x = wall / small_wall if small_wall > 0 else None
            cpu_x = cpu / small_cpu if small_cpu > 0 else None
            said_x = said / small_said if small_said > 0 else None
            note = ""
            if small >= GOAL_VMS and times >= 9.5:  # 10 x the VMs: <= 10.5 x
                ok = said_x is not None and said_x <= GOAL_RATIO
                verdict |= 0 if ok else 1
                note = f"  goal <= {GOAL_RATIO:g} x: {'OK' if ok else 'MISSED'}"
            print(f"{'':>12}  vs {small:,} ({times:.1f} x the VMs): {_times(said_x)} the "
                  f"CPU the server says ({said:+.3f} s vs {small_said:+.3f} s){note}; "
                  f"{_times(wall_x)} the time ({wall:+.3f} s vs {small_wall:+.3f} s), "
                  f"{_times(cpu_x)} the CPU ({cpu:+.3f} s vs {small_cpu:+.3f} s)")  # fmt: skip
    return verdict


def _times(ratio: float | None) -> str:
    return "- x" if ratio is None else f"{ratio:.1f} x"


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="restarts per fleet size")
    parser.add_argument("--sizes", default="10000,100000", help="fleet sizes, comma-separated")
    parser.add_argument("--profile", action="store_true", help="profile the largest restart")
    parser.add_argument("--priority", choices=("normal", "high", "realtime"), default="normal")
    parser.add_argument("--forewarn-src", type=Path, help="serve this src tree instead")
    args = parser.parse_args()
    prioritise(args.priority)
    if args.forewarn_src is not None:
        if not (args.forewarn_src / "forewarn" / "__init__.py").is_file():
            parser.error(f"{args.forewarn_src} holds no forewarn package (give its src)")
        ENV["PYTHONPATH"] = str(args.forewarn_src.resolve())
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as warm:  # imports read from disk once, untimed
        measure(Path(warm), 0, 1)
    print(f"forewarn serve: from process start until the endpoint answers 200; {args.runs} "
          "restarts each (fleet from the database)")  # fmt: skip
    source = args.forewarn_src or "the installed tree"
    print(f"serving {source}; priority {args.priority}; {os.cpu_count()} CPUs, "
          f"load before the run {_load()}")  # fmt: skip
    if os.getloadavg()[0] > (os.cpu_count() or 1) / 2:
        print("warning: the machine is busy; times will be inflated (CPU times less so)")
    print(f"{'VMs':>12} {'first start':>12} {'restart best':>15} {'worst':>7} "
          f"{'above baseline':>15} {'CPU best':>11} {'CPU said':>12} {'RSS':>7}")  # fmt: skip
    verdict = 0
    # VMs, above the baseline: wall, CPU, the server's "ready in"; RSS
    rows: list[tuple[int, float, float, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        baseline = base_cpu = base_said = base_rss = 0.0
        for vms in [0, *sizes]:
            label = "1 (baseline)" if vms == 0 else f"{vms + 1:,}"
            try:
                first, restarts = measure(root, vms, args.runs)
            except RuntimeError as exc:  # e.g. an older tree that refuses the fleet
                print(f"{label:>12}  did not start: {str(exc).strip().splitlines()[-1]}")
                verdict = 1
                continue
            # the best restart: on a shared machine, neighbours only ever add time
            best = min(r.seconds for r in restarts)
            worst = max(r.seconds for r in restarts)
            rss = statistics.median(r.rss_mb for r in restarts)
            cpu = min(r.cpu for r in restarts)
            said = min(r.in_command for r in restarts)
            if vms == 0:
                baseline, base_cpu, base_said, base_rss = best, cpu, said, rss
            else:
                rows.append((vms, best - baseline, cpu - base_cpu, said - base_said,
                             rss - base_rss))  # fmt: skip
            above = "" if vms == 0 else f"{best - baseline:+.3f} s"
            note = ""
            if vms >= GOAL_VMS:
                ok = best <= GOAL_SECONDS
                verdict |= 0 if ok else 1
                note = f"  goal <= {GOAL_SECONDS:g} s: {'OK' if ok else 'MISSED'}"
            if vms >= FIRST_GOAL_VMS:
                ok = first.seconds <= FIRST_GOAL_SECONDS
                verdict |= 0 if ok else 1
                note += f"; first start <= {FIRST_GOAL_SECONDS:g} s: {'OK' if ok else 'MISSED'}"
            print(f"{label:>12} {first.seconds:10.2f} s {best:13.2f} s {worst:5.2f} s "
                  f"{above:>15} {cpu:9.3f} s {said:10.3f} s {rss:4.0f} MB{note}")  # fmt: skip
        print(f"load after the run {_load()}")
        verdict |= print_ratios(rows)
        if args.profile:
            profile_restart(root, sizes[-1])
    return verdict


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
