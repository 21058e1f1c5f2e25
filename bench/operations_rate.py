"""Control-API operation creation rate at 1,000 and at 50,000 live operations.

    .venv/bin/python bench/operations_rate.py [--levels 1000,50000] [--sample 1000]

Starts ``forewarn serve`` (pinned to one core) with a scale set of 60,000 VMs in
placement groups of 10, ``--enablement always``, and creates user reboots through
``POST /api/v1/operations``, one per VM, each with a day's notice so that none of them
ends during the run: every operation created stays live. At each level it times the next
``--sample`` creations (the client keeps ``--connections`` requests in flight from the
other core), prints operations/s and the ratio to the first level (goal: the rate at
50,000 live operations close to the rate at 1,000; PASS at ``--min-ratio``).

Why this shape: a VM has at most one live user operation, so 50,000 live operations need
50,000 VMs; placement groups of 10 keep each scope's document small (at most 10 events),
so what the rate measures is the platform's bookkeeping over every live operation, not
documents growing. Standalone VMs would be the purest shape but 60,000 scopes in a fleet
file take a minute to parse; a scope-wide operation is one operation, not thousands.
The filling between levels is timed as well (per 1,000) and shown as the curve.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loadgen import (
    LOAD_CPU,
    PRIORITIES,
    exit_on_sigterm,
    forewarn_env,
    free_port,
    load_average,
    start_server,
)

__all__ = ["Creator", "main"]

SCALE_SET = "ss"


class Creator:
    """Creates user reboots, one per VM in order, over a few keep-alive connections."""

    def __init__(self, port: int, connections: int, notice: float) -> None:
        self.port = port
        self.connections = connections
        self.notice = notice
        self.created = 0
        self.failures: list[str] = []
        self._lock = threading.Lock()

    def _next(self, stop: int) -> int | None:
        with self._lock:
            if self.created >= stop or self.failures:
                return None
            index = self.created
            self.created += 1
            return index

    def _worker(self, stop: int) -> None:
        if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > LOAD_CPU:
            os.sched_setaffinity(0, {LOAD_CPU})  # this thread only: never the server's core
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            while (index := self._next(stop)) is not None:
                body = json.dumps({
                    "kind": "user-reboot",
                    "vms": [f"{SCALE_SET}_{index}"],
                    "notice_seconds": self.notice,
                })  # fmt: skip
                conn.request("POST", "/api/v1/operations", body,
                             {"Content-Type": "application/json"})  # fmt: skip
                response = conn.getresponse()
                raw = response.read()
                if response.status != 201:
                    with self._lock:
                        self.failures.append(f"{response.status}: {raw[:200]!r}")
        finally:
            conn.close()

    def create_until(self, total: int) -> float:
        """Create operations until ``total`` exist; returns operations/s over this stretch."""
        before = self.created
        started = time.perf_counter()
        threads = [
            threading.Thread(target=self._worker, args=(total,)) for _ in range(self.connections)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if self.failures:
            raise RuntimeError(f"creating an operation failed: {self.failures[0]}")
        elapsed = time.perf_counter() - started
        return (self.created - before) / elapsed if elapsed > 0 else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="1000,50000", help="live operations to measure at")
    parser.add_argument("--sample", type=int, default=1000, help="creations timed per level")
    parser.add_argument("--vms", type=int, default=60000)
    parser.add_argument("--group-size", type=int, default=10, help="VMs per placement group")
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--min-ratio", type=float, default=0.8)
    parser.add_argument(
        "--max-minutes", type=float, default=30.0, help="give up filling after this long"
    )
    parser.add_argument(
        "--forewarn-src",
        type=Path,
        help="serve forewarn from this src directory (e.g. of `git archive COMMIT`)",
    )
    parser.add_argument(
        "--priority",
        choices=PRIORITIES,
        default="normal",
        help="run the server ahead of other work on a shared machine (root)",
    )
    args = parser.parse_args(argv)
    exit_on_sigterm()
    levels = sorted(int(x) for x in args.levels.split(","))
    if levels[-1] + args.sample > args.vms:
        parser.error("--vms must be at least the highest level plus --sample (one op per VM)")
    with tempfile.TemporaryDirectory(prefix="ops-rate-") as tmp:
        work = Path(tmp)
        fleet = work / "fleet.yaml"
        groups = max(1, args.vms // args.group_size)
        fleet.write_text(
            f"scopes:\n  - {{kind: scale_set, name: {SCALE_SET}, vms: {args.vms}, "
            f"placement_groups: {groups}}}\n",
            encoding="utf-8",
        )
        imds_port, control_port = free_port(), free_port()
        command = [
            sys.executable, "-m", "forewarn", "serve", "--fleet", str(fleet),
            "--db", str(work / "ops.db"), "--enablement", "always",
            "--imds-bind", f"127.0.0.1:{imds_port}", "--control-bind", f"127.0.0.1:{control_port}",
        ]  # fmt: skip
        before = load_average()
        deadline = time.monotonic() + args.max_minutes * 60
        rates: dict[int, float] = {}
        curve: list[tuple[int, float]] = []
        env = forewarn_env(args.forewarn_src)
        with start_server(command, [imds_port, control_port], work / "server.log", env=env,
                          priority=args.priority):  # fmt: skip
            creator = Creator(control_port, args.connections, notice=86400.0)
            for level in levels:
                while creator.created < level and time.monotonic() < deadline:
                    step = min(level, (creator.created // 1000 + 1) * 1000)
                    rate = creator.create_until(step)
                    curve.append((creator.created, rate))
                    print(f"  filling: {creator.created:6d} live, {rate:6.0f} ops/s", flush=True)
                if creator.created < level:
                    print(f"gave up filling at {creator.created} live operations "
                          f"(--max-minutes {args.max_minutes:g})")  # fmt: skip
                    break
                rates[level] = creator.create_until(level + args.sample)
                print(f"at {level:6d} live: {rates[level]:6.0f} operations/s", flush=True)
    print(f"\noperation creation through POST /api/v1/operations ({args.connections} connections, "
          f"{args.vms} VMs in placement groups of {args.group_size}); "
          f"load average before {before}, after {load_average()}")  # fmt: skip
    first = levels[0]
    for level in levels:
        if level not in rates:
            print(f"  {level:6d} live operations: not reached                      MISS")
            continue
        ratio = rates[level] / rates[first] if rates.get(first) else 0.0
        verdict = "" if level == first else ("PASS" if ratio >= args.min_ratio else "MISS")
        print(f"  {level:6d} live operations: {rates[level]:7.0f} ops/s  ratio {ratio:4.2f}"
              f"  (goal >= {args.min_ratio:g})  {verdict}")  # fmt: skip
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
