"""Scale-out on PostgreSQL: throughput with 1, 2 and 4 front-ends, and approval latency.

One command (needs wrk and a PostgreSQL server; trust or password in the URL):

    python bench/scaleout.py [--seconds 5] [--trials 40] [--vms 1000]
                             [--pg postgresql://postgres@127.0.0.1:5432/postgres]

In one run, on the same generated fleet (a fresh database, dropped at the end):

- **baseline**: one ``forewarn serve`` on its own SQLite database;
- **store, N front-ends** for N in 1, 2, 4, sharing one PostgreSQL database.

Throughput: ``forewarn serve --store ... --workers N`` (every worker on the same ports,
SO_REUSEPORT), keep-alive requests per second of the metadata endpoint under ``wrk`` (two
threads, 64 connections, one address: the per-VM rate limit is off).

Approval latency: N separate ``forewarn serve --store ...`` processes, each with ports of
its own so that each one's view can be read. For each trial a user reboot is triggered
on a fresh VM; once every front-end shows it, the VM approves it through one front-end
(each in turn: the leader and followers alike), and every front-end's endpoint is polled
as that VM (every 5 ms) until it shows the event Started. Reported: median and
p99 of the time until the approval is answered (200: durably recorded) and until the
last front-end shows it Started, both from just before the approval is sent; and the
mean commit-to-view time the followers measured themselves (``/metrics``) meanwhile.
"vs 1" is throughput against the baseline's.

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
POLL_SECONDS = 0.005
SERVE_ARGS = ["--clock", "virtual", "--rate-limit", "0", "--enablement", "always",
              "--log-level", "warning"]  # fmt: skip


@dataclass
class Result:
    """One configuration's figures."""

    name: str
    rate: float
    lowest: float
    highest: float
    answered: list[float]
    latencies: list[float]
    #: Mean commit-to-view time the followers measured themselves (None: no follower).
    replication: float | None

    def line(self, baseline: Result | None) -> str:
        ratio = f"{self.rate / baseline.rate:5.2f}x" if baseline and baseline.rate else "    -"
        answered, everywhere = _percentiles(self.answered), _percentiles(self.latencies)
        spread = f"{self.lowest:6.0f}-{self.highest:<6.0f}"
        lag = "-" if self.replication is None else f"{self.replication * 1000:.1f} ms"
        return (
            f"| {self.name:<20} | {self.rate:8.0f} ({spread}) | {ratio} | {answered} "
            f"| {everywhere} | {lag} |"
        )


def _percentiles(values: list[float]) -> str:
    """Median and p99 in milliseconds."""
    if not values:
        return "     -  /      -  "
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"{statistics.median(ordered) * 1000:6.1f} / {p99 * 1000:6.1f} ms"


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
    seen: list[str] = []
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


def wait_for_cluster(control: str, expected: int) -> list[dict[str, Any]]:
    """Until ``expected`` processes report and one of them leads, behind the control API
    at ``control`` (a base URL); their ``members`` rows (none for SQLite)."""
    deadline = time.monotonic() + 120
    with httpx.Client(trust_env=False, timeout=10) as client:
        while time.monotonic() < deadline:
            response = client.get(control + "/api/v1/cluster")
            if response.status_code == 404:
                return []  # a single SQLite server
            members: list[dict[str, Any]] = response.json()["members"]
            roles = [m["role"] for m in members]
            if len(roles) == expected and roles.count("leader") == 1:
                return members
            time.sleep(0.2)
    raise RuntimeError("the processes did not all report in time")


async def approval_latency(
    fronts: list[Server], vm: dict[str, Any], approve_on: int
) -> tuple[float, float]:
    """Trigger a reboot of ``vm``, have it approve through front-end ``approve_on``; the
    time until the approval is answered, and until every front-end shows it Started (each
    front-end's endpoint polled as the VM, every ``POLL_SECONDS``)."""
    async with httpx.AsyncClient(trust_env=False, timeout=30) as control:
        created = await control.post(
            fronts[0].control + "/api/v1/operations",
            json={"kind": "user-reboot", "target": vm["name"]},
        )
        created.raise_for_status()
    event_id = created.json()["event_ids"][0]
    params, headers = {"api-version": "2020-07-01"}, {"Metadata": "true"}
    clients = [
        httpx.AsyncClient(
            base_url=front.imds, trust_env=False, timeout=30,
            transport=httpx.AsyncHTTPTransport(local_address=vm["address"]),
        )
        for front in fronts
    ]  # fmt: skip
    try:

        async def shows(client: httpx.AsyncClient, status: str) -> float:
            while True:
                doc = (await client.get("/metadata/scheduledevents", params=params,
                                        headers=headers)).json()  # fmt: skip
                if any(e["EventId"] == event_id and e["EventStatus"] == status
                       for e in doc["Events"]):  # fmt: skip
                    return time.perf_counter()
                await asyncio.sleep(POLL_SECONDS)

        await asyncio.gather(*(shows(c, "Scheduled") for c in clients))
        watchers = [asyncio.create_task(shows(c, "Started")) for c in clients]
        sent = time.perf_counter()
        answer = await clients[approve_on].post(
            "/metadata/scheduledevents", params=params, headers=headers,
            json={"StartRequests": [{"EventId": event_id}]},
        )  # fmt: skip
        answered = time.perf_counter()
        if answer.status_code != 200:
            raise RuntimeError(f"approval answered {answer.status_code}: {answer.text}")
        seen = await asyncio.gather(*watchers)
        return answered - sent, max(seen) - sent
    finally:
        for client in clients:
            await client.aclose()


def throughput(
    configs: dict[str, tuple[list[str], int]], seconds: int, rounds: int
) -> dict[str, list[float]]:
    """Keep-alive req/s of each configuration's endpoint: every server runs at once and
    the wrk runs alternate between them, ``rounds`` times, so that a busy moment of the
    machine falls on all of them alike."""
    rates: dict[str, list[float]] = {name: [] for name in configs}
    with contextlib.ExitStack() as stack:
        servers = {name: stack.enter_context(serve(a, n)) for name, (a, n) in configs.items()}
        for name, server in servers.items():
            wait_for_cluster(server.control, configs[name][1])
            wrk(server.imds, 1)  # warm-up: every worker's caches
        for _ in range(rounds):
            for name, server in servers.items():
                rates[name].append(wrk(server.imds, seconds))
    return rates


def replication_lag(servers: list[Server]) -> float | None:
    """The mean commit-to-view time the followers report (``/metrics``), or None."""
    total = count = 0.0
    with httpx.Client(trust_env=False, timeout=30) as client:
        for server in servers:
            text = client.get(server.control + "/metrics").text
            sums = re.search(
                r"^forewarn_replication_apply_lag_seconds_sum ([\d.e+-]+)$", text, re.M
            )
            counts = re.search(
                r"^forewarn_replication_apply_lag_seconds_count ([\d.e+-]+)$", text, re.M
            )
            if sums and counts:
                total += float(sums.group(1))
                count += float(counts.group(1))
    return total / count if count else None


def latencies(
    args: list[str], fronts: int, trials: int
) -> tuple[list[tuple[float, float]], float | None]:
    """Approval timings over ``fronts`` separate processes (each with its own ports, so
    that each one's view can be read), approving on each in turn; and the followers'
    own mean replication lag over the same time."""
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(serve(args, 1)) for _ in range(fronts)]
        wait_for_cluster(servers[0].control, fronts)
        with httpx.Client(trust_env=False, timeout=30) as client:
            vms = client.get(servers[0].control + "/api/v1/vms").json()
        free = [v for v in vms if v["status"] == "running"][::-1]
        timings = [
            asyncio.run(approval_latency(servers, free.pop(), trial % fronts))
            for trial in range(trials)
        ]
        return timings, replication_lag(servers)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5, help="wrk run per configuration")
    parser.add_argument("--trials", type=int, default=40, help="approvals per configuration")
    parser.add_argument("--rounds", type=int, default=3, help="wrk runs per configuration")
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
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as databases:
        fleet = ["--fleet", str(fleet_file(Path(tmp), args.vms))]
        configs = {"baseline (SQLite, 1)": ([*fleet, "--db", f"{tmp}/b.db"], 1)}
        for count in args.workers:
            store = ["--store", databases.enter_context(database(args.pg))]
            name = f"store, {count} front-end{'s' if count > 1 else ''}"
            configs[name] = ([*fleet, *store], count)
        rates = throughput(
            {name: ([*a, *(["--workers", str(n)] if n > 1 else [])], n)
             for name, (a, n) in configs.items()},
            args.seconds, args.rounds,
        )  # fmt: skip
        results = []
        for name, (command, count) in configs.items():
            timings, lag = latencies(command, count, args.trials)
            results.append(
                Result(name, statistics.median(rates[name]), min(rates[name]), max(rates[name]),
                       [a for a, _ in timings], [e for _, e in timings], lag)
            )  # fmt: skip
    print(f"load average after: {load_average()}")
    print(
        f"\n{args.vms} VMs; wrk -t2 -c64, {args.rounds} alternating runs of {args.seconds} s "
        f"(median, range); {args.trials} approvals each\n"
    )
    print("| front-ends | req/s (range) | vs 1 | approval answered p50 / p99 "
          "| approval → every view p50 / p99 | replication lag (mean) |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|")
    for result in results:
        print(result.line(results[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
