"""Scale-out on PostgreSQL: throughput with 1, 2 and 4 front-ends, and approval latency.

One command (needs wrk and a PostgreSQL server; trust or password in the URL):

    python bench/scaleout.py [--seconds 5] [--trials 40] [--vms 1000]
                             [--pg postgresql://postgres@127.0.0.1:5432/postgres]

In one run, on the same generated fleet (a fresh database, dropped at the end):

- **baseline**: one ``forewarn serve`` on its own SQLite database;
- **store, N workers** for N in 1, 2, 4: ``forewarn serve --store ... --workers N``,
  every worker on the same ports (SO_REUSEPORT), one of them leading.

For each: keep-alive throughput of the metadata endpoint (``wrk``, 64 connections, one
address: the per-VM rate limit is off), and the latency from an approval to every
front-end's view: a user reboot is triggered on a fresh VM, the VM approves it through
the shared endpoint (any worker), and each worker's own view (``/api/v1/documents`` on
its private control address) is polled until it shows the event Started; the latency is
from just before the approval is sent to the moment the last worker showed it (median and
p99 over ``--trials``). On the baseline the only view is the server's own, which changes
before the approval's answer is sent.

Throughput cannot grow past the machine's cores: wrk shares them with the workers, and
the figure says so when the load average shows other work.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loadgen import free_port, load_average

PATH = "/metadata/scheduledevents?api-version=2020-07-01"
#: How often each front-end's view is read while waiting (the latency's resolution).
POLL_SECONDS = 0.002
SERVE_ARGS = ["--clock", "virtual", "--rate-limit", "0", "--enablement", "always",
              "--log-level", "warning"]  # fmt: skip


@dataclass
class Result:
    """One configuration's figures."""

    name: str
    rate: float
    latencies: list[float]

    def line(self, baseline: Result | None) -> str:
        lat = sorted(self.latencies)
        median = statistics.median(lat) * 1000 if lat else float("nan")
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000 if lat else float("nan")
        ratio = f"{self.rate / baseline.rate:5.2f}x" if baseline and baseline.rate else "    -"
        return (
            f"| {self.name:<22} | {self.rate:10.0f} | {ratio} | {median:7.1f} ms | {p99:7.1f} ms |"
        )


def fleet_file(directory: Path, vms: int) -> Path:
    """Availability sets of 100 VMs (one more for the remainder)."""
    sets = max(1, vms // 100)
    lines = ["scopes:"]
    for i in range(sets):
        count = 100 if i < sets - 1 else vms - 100 * (sets - 1)
        lines.append(
            f"  - {{kind: availability_set, name: set{i}, vms: {count}, update_domains: 5}}"
        )
    path = directory / "fleet.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@contextlib.contextmanager
def database(admin_url: str) -> Iterator[str]:
    """A new database on the server of ``admin_url``, dropped afterwards."""
    name = f"forewarn_bench_{secrets.token_hex(4)}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"'.encode())
    base, _, _ = admin_url.rpartition("/")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


@dataclass
class Server:
    proc: subprocess.Popen[str]
    imds: str
    control: str


def _drain(proc: subprocess.Popen[str]) -> None:
    """Keep reading the server's output so it never blocks on a full pipe."""
    stream = proc.stdout
    assert stream is not None

    def pump() -> None:
        for _ in stream:
            pass

    threading.Thread(target=pump, daemon=True).start()


@contextlib.contextmanager
def serve(args: list[str], workers: int) -> Iterator[Server]:
    imds, control = free_port(), free_port()
    binds = ["--imds-bind", f"127.0.0.1:{imds}", "--control-bind", f"127.0.0.1:{control}"]
    command = [sys.executable, "-m", "forewarn", "serve", *args, *SERVE_ARGS, *binds]
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    assert proc.stdout is not None
    seen = []
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("server exited while starting:\n" + "".join(seen))
        seen.append(line)
        if ("share the fleet" if workers > 1 else "control API on") in line:
            break
    else:
        raise RuntimeError("server did not start in time")
    _drain(proc)
    try:
        yield Server(proc, f"http://127.0.0.1:{imds}", f"http://127.0.0.1:{control}")
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def wrk(url: str, seconds: int) -> float:
    out = subprocess.run(
        ["wrk", "-t2", "-c64", f"-d{seconds}s", "-H", "Metadata: true", url + PATH],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if match is None or "Non-2xx" in out:
        raise RuntimeError(f"wrk: {out}")
    return float(match.group(1))


def views(server: Server, expected: int) -> list[str]:
    """Each front-end's own control URL (all workers listed, leader elected)."""
    deadline = time.monotonic() + 60
    with httpx.Client(trust_env=False, timeout=10) as client:
        while time.monotonic() < deadline:
            response = client.get(server.control + "/api/v1/cluster")
            if response.status_code == 404:
                return [server.control]  # a single SQLite server
            data = response.json()
            members = [m for m in data["members"] if m["control_url"]]
            roles = [m["role"] for m in members]
            if len(members) == expected and roles.count("leader") == 1:
                return [m["control_url"] for m in members]
            time.sleep(0.2)
    raise RuntimeError("the workers did not all report in time")


async def approval_latency(server: Server, fronts: list[str], vms: list[dict[str, Any]]) -> float:
    """Trigger a reboot of one VM, approve it, time until every front-end shows it Started."""
    vm = vms.pop()
    async with httpx.AsyncClient(trust_env=False, timeout=30) as control:
        created = await control.post(
            server.control + "/api/v1/operations",
            json={"kind": "user-reboot", "target": vm["name"]},
        )
        created.raise_for_status()
        event_id = created.json()["event_ids"][0]
        clients = [httpx.AsyncClient(base_url=f, trust_env=False, timeout=30) for f in fronts]
        try:

            async def shows(client: httpx.AsyncClient, status: str) -> float:
                while True:
                    doc = (await client.get(f"/api/v1/documents/{vm['name']}")).json()
                    if any(e["EventId"] == event_id and e["EventStatus"] == status
                           for e in doc["Events"]):  # fmt: skip
                        return time.perf_counter()
                    await asyncio.sleep(POLL_SECONDS)

            await asyncio.gather(*(shows(c, "Scheduled") for c in clients))
            transport = httpx.AsyncHTTPTransport(local_address=vm["address"])
            async with httpx.AsyncClient(transport=transport, trust_env=False, timeout=30) as me:
                watchers = [asyncio.create_task(shows(c, "Started")) for c in clients]
                sent = time.perf_counter()
                answer = await me.post(
                    server.imds + "/metadata/scheduledevents?api-version=2020-07-01",
                    json={"StartRequests": [{"EventId": event_id}]},
                    headers={"Metadata": "true"},
                )
                if answer.status_code != 200:
                    raise RuntimeError(f"approval answered {answer.status_code}: {answer.text}")
                seen = await asyncio.gather(*watchers)
            return max(seen) - sent
        finally:
            for client in clients:
                await client.aclose()


def measure(name: str, args: list[str], fronts: int, seconds: int, trials: int) -> Result:
    with serve(args, fronts) as server:
        urls = views(server, fronts)
        with httpx.Client(trust_env=False, timeout=30) as client:
            vms = client.get(server.control + "/api/v1/vms").json()
        wrk(server.imds, 1)  # warm-up: every worker's caches
        rate = wrk(server.imds, seconds)
        free = [v for v in vms if v["status"] == "running"]
        latencies = [asyncio.run(approval_latency(server, urls, free)) for _ in range(trials)]
        return Result(name, rate, latencies)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5, help="wrk run per configuration")
    parser.add_argument("--trials", type=int, default=40, help="approvals per configuration")
    parser.add_argument("--vms", type=int, default=1000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument(
        "--pg",
        default="postgresql://postgres@127.0.0.1:5432/postgres",
        help="a database to connect to, to create (and drop) the benchmark's",
    )
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("needs wrk (Debian: apt-get install wrk)", file=sys.stderr)
        return 2
    print(f"cores {os.cpu_count()}, load average before: {load_average()}")
    with tempfile.TemporaryDirectory() as tmp:
        fleet = fleet_file(Path(tmp), args.vms)
        baseline = ["--fleet", str(fleet), "--db", f"{tmp}/b.db"]
        results = [measure("baseline (SQLite, 1)", baseline, 1, args.seconds, args.trials)]
        for workers in args.workers:
            with database(args.pg) as url:
                command = ["--fleet", str(fleet), "--store", url, "--workers", str(workers)]
                name = f"store, {workers} worker{'s' if workers > 1 else ''}"
                results.append(measure(name, command, workers, args.seconds, args.trials))
    print(f"load average after: {load_average()}")
    print(f"\n{args.vms} VMs; wrk -t2 -c64 {args.seconds} s; {args.trials} approvals each\n")
    print("| front-ends             |      req/s | vs baseline | approval → every view p50 | p99 |")
    print("|------------------------|-----------:|------:|-----------:|-----------:|")
    for result in results:
        print(result.line(results[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
