"""What reading a big fleet costs: the report, the dashboard's first render, the topology.

For each fleet size (``--sizes``: 10,000, 100,000 and 999,999 VMs made from a count, as
``bench/fleet_startup.py`` builds them), start ``forewarn serve`` on a virtual clock, play
the same drill on each (a host update of ten availability sets, 1,000 VMs of which none
polls, an hour on), then time, best of ``--runs``:

- ``forewarn report`` (the terminal), ``--json``, ``--html FILE`` and ``--junit FILE``,
  each a whole command (its interpreter start included, as a user waits for it), with
  the lines it printed;
- the dashboard's first payload, ``GET /api/v1/dashboard`` over HTTP (a row per region
  and scope kind, with its worst 50 scopes), and its size;
- ``forewarn topology --json`` (every VM: the one reading that must grow with the fleet),
  and its size.

With ``--drill region`` the drill is a host update rolled over the whole region instead
(``region: true``, waves of ``--wave-hosts`` hosts, the clock a day on at a time until it
is over), none of whose VMs polls: every VM had an event, so every list of VMs in the
verdict is as long as the fleet; ``GET /api/v1/reactions`` (the rolled-up verdict the
dashboard and ``report --json`` read) is timed too, and ``topology --json`` left out.
The first reading after the drill grades it (timed once, on its own); the verdict is kept
while nothing moves, so every reading after it takes that verdict (the server's
``/metrics`` says how many were graded: printed at the end of each size). Meanwhile a
probe asks the server's event loop every 20 ms (``GET /healthz``: the loop that serves
the endpoint, asked without a poll, which would be a fact and grade the verdict anew):
its worst and 99th-percentile answer during the readings against 5 s of it before the
drill, so a reading that holds the loop (a grading or a collection on the interpreter's
lock) shows as the VMs would feel it.

Then each size against the smaller ones: how many times the cost for how many times the
VMs (goal, issue 39: at 1,000,000 VMs each within 10 x its cost at 100,000; the drill is
the same at every size, so a reading that grows at all grows with the fleet, not with
what there is to read).

    python bench/fleet_reading.py [--runs 3] [--sizes 10000,100000,999999]
                                  [--drill sets|region] [--wave-hosts 10000]
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet_startup import ENV, fleet_yaml, virtual_server

GOAL_RATIO = 10.0
PROBE_EVERY = 0.02  # seconds between the probe's polls of the endpoint
SETS = 10  # availability sets of 100 VMs the drill updates

READINGS = ("report", "report --json", "report --html", "report --junit", "dashboard",
            "topology --json")  # fmt: skip
REGION_READINGS = ("first reading (graded)", "report", "report --json", "report --html",
                   "report --junit", "dashboard", "reactions")  # fmt: skip


def _post(port: int, path: str, body: dict[str, object]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        if response.status >= 300:
            raise RuntimeError(f"POST {path}: {response.status}")
    finally:
        conn.close()


def _get(port: int, path: str) -> int:
    """GET ``path``; the size of the body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        size = len(response.read())
        if response.status != 200:
            raise RuntimeError(f"GET {path}: {response.status}")
        return size
    finally:
        conn.close()


def _command(control: int, args: list[str]) -> int:
    """Run ``forewarn --control ... ARGS``; the bytes it printed."""
    done = subprocess.run(
        [sys.executable, "-m", "forewarn", "--control", f"http://127.0.0.1:{control}", *args],
        capture_output=True, env={**ENV, "COLUMNS": "80"}, timeout=900, check=True,
    )  # fmt: skip
    return len(done.stdout)


def _verdict_counts(port: int) -> str:
    """How many verdicts the server graded and handed out again (its ``/metrics``)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    counts = [line for line in text.splitlines() if line.startswith("forewarn_verdicts_")]
    return ", ".join(counts)


def _best(runs: int, what: Callable[[], int]) -> tuple[float, int]:
    """The best wall time of ``runs`` calls, and what the last returned (a size)."""
    best, size = float("inf"), 0
    for _ in range(runs):
        began = time.perf_counter()
        size = what()
        best = min(best, time.perf_counter() - began)
    return best, size


class _Probe:
    """The server's ``/healthz`` asked every ``PROBE_EVERY`` s on a thread: each answer's
    time (the event loop's, which serves the VMs' polls too)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.times: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        while not self._stop.wait(PROBE_EVERY):
            began = time.perf_counter()
            conn.request("GET", "/healthz")
            conn.getresponse().read()
            self.times.append(time.perf_counter() - began)
        conn.close()

    def start(self) -> _Probe:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def figures(self) -> tuple[float, float, int]:
        """(p99, max, answers) in seconds."""
        ordered = sorted(self.times)
        return ordered[int(0.99 * (len(ordered) - 1))], ordered[-1], len(ordered)


def _region_drill(port: int, wave_hosts: int) -> float:
    """A host update over the whole region, played to its end; the seconds it took."""
    began = time.perf_counter()
    _post(port, "/api/v1/operations",
          {"kind": "host-update", "region": True, "wave_hosts": wave_hosts})  # fmt: skip
    for _ in range(10_000):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        try:
            conn.request("GET", "/api/v1/rollouts")
            (rollout,) = json.loads(conn.getresponse().read())
        finally:
            conn.close()
        if rollout["done"]:
            return time.perf_counter() - began
        _post(port, "/api/v1/clock/advance", {"seconds": 86400})
    raise RuntimeError("the region rollout did not end")


def measure(
    root: Path, vms: int, runs: int, drill: str = "sets", wave_hosts: int = 10_000
) -> dict[str, tuple[float, int, int]]:
    """Each reading of a ``vms``-VM fleet after the drill: (best seconds, bytes, lines)."""
    directory = root / f"fleet-{vms}"
    directory.mkdir()
    fleet = directory / "fleet.yaml"
    fleet.write_text(fleet_yaml(vms), encoding="utf-8")
    with virtual_server(fleet, directory / "fleet.db") as (_, _, control):
        probe = None
        if drill == "region":
            idle = _Probe(control).start()
            time.sleep(5)
            idle.stop()
            idle_p99, idle_max, _ = idle.figures()
            print(f"{vms:>9,} VMs: the region rollout took "
                  f"{_region_drill(control, wave_hosts):.1f} s", flush=True)  # fmt: skip
        else:
            for k in range(SETS):
                _post(control, "/api/v1/operations", {"kind": "host-update", "target": f"as{k}"})
            _post(control, "/api/v1/clock/advance", {"seconds": 3600})
        if drill == "region":  # the event loop, felt during the readings
            probe = _Probe(control).start()
        html, junit = directory / "report.html", directory / "report.xml"
        out: dict[str, tuple[float, int, int]] = {}
        if drill == "region":  # the grading itself, once; every reading after takes it
            began = time.perf_counter()
            size = _get(control, "/api/v1/reactions")
            out["first reading (graded)"] = (time.perf_counter() - began, size, 0)
        for name, args in (("report", ["report"]), ("report --json", ["report", "--json"]),
                           ("report --html", ["report", "--html", str(html)]),
                           ("report --junit", ["report", "--junit", str(junit)])):  # fmt: skip
            seconds, _ = _best(runs, lambda a=args: _command(control, a))  # type: ignore[misc]
            printed = subprocess.run(
                [sys.executable, "-m", "forewarn", "--control", f"http://127.0.0.1:{control}",
                 *args], capture_output=True, text=True, env={**ENV, "COLUMNS": "80"},
                check=True,
            ).stdout  # fmt: skip
            written = html if "--html" in args else junit if "--junit" in args else None
            size = written.stat().st_size if written is not None else len(printed)
            out[name] = (seconds, size, printed.count("\n"))
        seconds, size = _best(runs, lambda: _get(control, "/api/v1/dashboard"))
        out["dashboard"] = (seconds, size, 0)
        if drill == "region":
            seconds, size = _best(runs, lambda: _get(control, "/api/v1/reactions"))
            out["reactions"] = (seconds, size, 0)
            print(f"{vms:>9,} VMs: {_verdict_counts(control)}", flush=True)
        if probe is not None:
            probe.stop()
            p99, worst, answers = probe.figures()
            print(f"{vms:>9,} VMs: the event loop during the readings: p99 "
                  f"{p99 * 1000:.1f} ms, max {worst * 1000:.1f} ms ({answers} answers); "
                  f"idle p99 {idle_p99 * 1000:.1f} ms, max {idle_max * 1000:.1f} ms",
                  flush=True)  # fmt: skip
        else:
            seconds, size = _best(runs, lambda: _command(control, ["topology", "--json"]))
            out["topology --json"] = (seconds, size, 0)
        return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", default="10000,100000,999999")
    parser.add_argument("--drill", choices=("sets", "region"), default="sets")
    parser.add_argument("--wave-hosts", type=int, default=10_000)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[int, dict[str, tuple[float, int, int]]] = {}
    with tempfile.TemporaryDirectory(prefix="fleet-reading-") as tmp:
        for vms in sizes:
            results[vms] = measure(Path(tmp), vms, args.runs, args.drill, args.wave_hosts)
            print(f"{vms:>9,} VMs: " + ", ".join(
                f"{k} {s:.3f} s ({b / 1e6:.2f} MB{f', {n} lines' if n else ''})"
                for k, (s, b, n) in results[vms].items()
            ), flush=True)  # fmt: skip
    verdict = 0
    print("\nreading             " + "  ".join(f"{'x VMs':>6} {'x cost':>7}" for _ in sizes[1:]))
    for reading in REGION_READINGS if args.drill == "region" else READINGS:
        cells = []
        for small, big in itertools.pairwise(sizes):
            ratio = results[big][reading][0] / results[small][reading][0]
            cells.append(f"{big / small:6.1f} {ratio:6.2f}x")
            if big / small >= 9 and ratio > GOAL_RATIO:
                verdict = 1
        print(f"{reading:<19} " + "  ".join(cells))
    print("\ngoal: each reading at 10 x the VMs within 10 x its cost:",
          "PASS" if verdict == 0 else "MISS")  # fmt: skip
    return verdict


if __name__ == "__main__":
    sys.exit(main())
