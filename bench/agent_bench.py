"""The agent's benchmark: detection latency, memory, and 200 agents on one machine.

    .venv/bin/python bench/agent_bench.py [--events 30] [--agents 200] [--per-process 20]
    .venv/bin/python bench/agent_bench.py --big-document 10000

1. Detection: one ``forewarn agent run`` process (poll interval 1 s) against ``forewarn
   serve``; each round triggers a user reboot of its VM at a random phase of the poll
   cycle and times it from the trigger's answer (the server answers once the event is
   durable and in the document) until the handler (``sh`` appending ``date +%s.%N`` to a
   file) starts. Goal: median <= poll interval + 50 ms.
2. Memory: that agent's resident set (VmRSS, and the peak VmHWM) after the rounds,
   started the way the systemd unit starts it. Goal: <= 60 MB.
3. Fleet: ``--agents`` agents, one per VM of a fleet of that many VMs (each from its own
   loopback address), against one server in scaled real time (``--time-scale 20``: 45 s of
   notice, Started for 30 s). Every VM gets a user reboot; each agent runs a handler,
   approves, must see its event Started (the state a once-a-second poller can miss when
   it falls behind), then gone, and runs its recovery handler. Goal: every agent saw
   every state, none missed (a handler still running when its event started).

``--big-document N`` measures only this: one ``forewarn agent run`` against a fake
endpoint on loopback that serves a document of N Scheduled reboots of the agent's VM
(NotBefore 10 minutes ahead, a rule that approves without handlers), with 1,000 events
first as the baseline of the same run. It reports the time from serving the document to
the last approval, the POSTs that took, the worst /healthz answer meanwhile (probed every
100 ms), the polls meanwhile, CPU, peak RSS and SIGTERM to exit. Goal: every event
approved once, CPU per event at N within twice that at 1,000 (roughly linear; wall time
follows the machine's load), /healthz within 1 s throughout.

Agents run ``--per-process`` to a process (each a full ``Agent``: its own client
connection, source address, SQLite state file and registry; the agent keeps no
module-level state), not one process each: 200 interpreters would hold ~8 GB and spend
a minute of CPU just starting on a 2-core machine, which measures Python's start-up, not
the agent. ``--per-process 1`` runs one process per agent for those who want that.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

POLL = 1.0
GOAL_DETECTION = POLL + 0.050
GOAL_RSS_MB = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of ``pid`` in MB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024
    return values["VmRSS"], values["VmHWM"]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time ``pid`` used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Server:
    """``forewarn serve`` for the length of a measurement."""

    def __init__(self, workdir: Path, args: Sequence[str]) -> None:
        self.imds = free_port()
        self.control_port = free_port()
        self.log = (workdir / "server.log").open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "forewarn", "serve", "--db", str(workdir / "server.db"),
             "--imds-bind", f"127.0.0.1:{self.imds}",
             "--control-bind", f"127.0.0.1:{self.control_port}", "--rate-limit", "0",
             "--enablement", "always", *args],
            stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        import httpx  # here: agent_footprint's VM install (no httpx) imports this module

        self.http = httpx.Client(
            base_url=f"http://127.0.0.1:{self.control_port}", timeout=60, trust_env=False
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                if self.http.get("/api/v1/clock").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start; see {self.log.name}")
            time.sleep(0.1)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.imds}"

    def call(self, method: str, path: str, **kw: Any) -> Any:
        response = self.http.request(method, path, **kw)
        response.raise_for_status()
        return response.json()

    def addresses(self) -> dict[str, str]:
        topology = self.call("GET", "/api/v1/topology")
        return {vm["name"]: vm["address"] for s in topology["scopes"] for vm in s["vms"]}

    def close(self) -> None:
        self.http.close()
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        self.log.close()


@contextmanager
def server(workdir: Path, args: Sequence[str]) -> Iterator[Server]:
    running = Server(workdir, args)
    try:
        yield running
    finally:
        running.close()


def agent_config(state: Path, address: str, handler: list[str], metrics: str = "") -> str:
    return f"""
log_level = "warning"
poll_interval = {POLL}
local_address = "{address}"
state_path = "{state}"
metrics_bind = "{metrics}"
safety_margin = 1

[handlers.prep]
type = "exec"
argv = {json.dumps(handler)}

[handlers.back]
type = "exec"
argv = ["true"]

[[rules]]
event_types = ["Reboot"]
this_vm = true
handlers = ["prep"]
recovery = ["back"]
approval = "{{approval}}"
"""


# ------------------------------------------------------------------ 1 + 2


def detection(root: Path, rounds: int) -> tuple[list[float], tuple[float, float]]:
    workdir = root / "detection"
    workdir.mkdir()
    starts = workdir / "starts.txt"
    handler = ["sh", "-c", f"date +%s.%N >> {starts}"]
    with server(workdir, ["--clock", "virtual"]) as srv:
        config = workdir / "agent.toml"
        text = agent_config(workdir / "state.db", srv.addresses()["web-0"], handler)
        config.write_text(text.replace("{approval}", "never"))
        env = {**os.environ, "FOREWARN_IMDS_URL": srv.url}
        agent = subprocess.Popen(
            [sys.executable, "-m", "forewarn", "agent", "run", "-c", str(config)],
            env=env, stderr=(workdir / "agent.log").open("w"),
        )  # fmt: skip
        try:
            time.sleep(3)  # start-up, identity, first polls
            latencies = []
            for _ in range(rounds):
                time.sleep(random.uniform(0, POLL))  # a random phase of the poll cycle
                seen = len(starts.read_text().splitlines()) if starts.exists() else 0
                op = srv.call("POST", "/api/v1/operations",
                              json={"kind": "user-reboot", "target": "web-0"})  # fmt: skip
                visible = time.time()  # the event is in the document once the call returns
                deadline = time.monotonic() + 10
                while True:
                    lines = starts.read_text().splitlines() if starts.exists() else []
                    if len(lines) > seen:
                        latencies.append(float(lines[seen]) - visible)
                        break
                    if time.monotonic() > deadline:
                        raise RuntimeError("the handler did not start in 10 s")
                    time.sleep(0.005)
                for event_id in op["event_ids"]:
                    srv.call("POST", f"/api/v1/events/{event_id}/cancel", json={})
            memory = rss_mb(agent.pid)
        finally:
            agent.send_signal(signal.SIGTERM)
            agent.wait(timeout=60)
    return latencies, memory


# ------------------------------------------------------------------ 3


def fleet_yaml(vms: int) -> str:
    sets = [min(10, vms - k) for k in range(0, vms, 10)]
    lines = ["scopes:"]
    for i, count in enumerate(sets):
        lines.append(f"  - {{kind: availability_set, name: s{i}, vms: {count}, "
                     "update_domains: 5, fault_domains: 2}")  # fmt: skip
    return "\n".join(lines) + "\n"


async def _run_many(paths: list[str]) -> None:
    """Child mode: several agents in one event loop until SIGTERM."""
    from forewarn.agent import Agent, load_config
    from forewarn.agent.logs import configure_logging

    level = os.environ.get("AGENT_BENCH_LOG_LEVEL", "warning")
    configure_logging("json", level)
    agents = [Agent(load_config(p, {}, {"log_level": level})) for p in paths]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    runs = asyncio.gather(*(agent.run(stop) for agent in agents))
    while not all(agent.readiness()[0] for agent in agents):  # identity known, polling
        await asyncio.sleep(0.1)
    print("ready", flush=True)
    await runs


def fleet(root: Path, count: int, per_process: int) -> dict[str, Any]:
    workdir = root / "fleet"
    workdir.mkdir()
    (workdir / "fleet.yaml").write_text(fleet_yaml(count))
    args = ["--fleet", str(workdir / "fleet.yaml"), "--clock", "real", "--time-scale", "20"]
    with server(workdir, args) as srv:
        addresses = srv.addresses()
        vms = sorted(addresses)
        configs = []
        for vm in vms:
            path = workdir / f"{vm}.toml"
            text = agent_config(workdir / f"{vm}.db", addresses[vm], ["true"])
            path.write_text(text.replace("{approval}", "after-handlers"))
            configs.append(str(path))
        env = {**os.environ, "FOREWARN_IMDS_URL": srv.url}
        children = [
            subprocess.Popen(
                [sys.executable, __file__, "--child", *configs[i : i + per_process]],
                env=env,
                stdout=subprocess.PIPE,
                stderr=(workdir / f"agents-{i}.log").open("w"),
                text=True,
            )
            for i in range(0, len(configs), per_process)
        ]
        try:
            begun = time.monotonic()
            for child in children:  # every agent knows its VM and has polled
                assert child.stdout is not None
                if child.stdout.readline().strip() != "ready":
                    raise RuntimeError(f"an agent process failed; see {workdir}/agents-*.log")
            startup = time.monotonic() - begun
            started = time.monotonic()
            ops = [srv.call("POST", "/api/v1/operations",
                            json={"kind": "user-reboot", "target": vm}) for vm in vms]  # fmt: skip
            event_ids = {op["event_ids"][0] for op in ops}
            deadline = time.monotonic() + 180
            while srv.call("GET", "/api/v1/events") and time.monotonic() < deadline:
                time.sleep(1)
            time.sleep(3 * POLL)  # the last recoveries
            elapsed = time.monotonic() - started
            rss = [rss_mb(child.pid)[0] for child in children]
            cpu = sum(cpu_seconds(child.pid) for child in children)
        finally:
            for child in children:
                child.send_signal(signal.SIGTERM)
            for child in children:
                child.wait(timeout=120)
    rows = []
    for vm in vms:
        with sqlite3.connect(workdir / f"{vm}.db") as db:
            rows += db.execute(
                "SELECT event_id, handled_at, outcome, approved_at, started_seen_at, missed_at,"
                " gone_at, recovered_at FROM events WHERE ignored = 0"
            ).fetchall()
    mine = [r for r in rows if r[0] in event_ids]
    return {
        "agents": count,
        "processes": len(children),
        "events": len(event_ids),
        "seen": len(mine),
        "handled_ok": sum(1 for r in mine if r[2] == "ok"),
        "approved": sum(1 for r in mine if r[3] is not None),
        "saw_started": sum(1 for r in mine if r[4] is not None),
        "missed": sum(1 for r in mine if r[5] is not None),
        "gone": sum(1 for r in mine if r[6] is not None),
        "recovered": sum(1 for r in mine if r[7] is not None),
        "seconds": elapsed,
        "startup": startup,
        "rss_per_process_mb": statistics.median(rss),
        "cpu_seconds": cpu,
    }


# ------------------------------------------------------------------ big document


class FakeEndpoint:
    """Serves one unchanging document (with an ETag and 304s, unless ``etag`` is off);
    counts GETs by source address and keeps the event ids of each approval."""

    def __init__(self, events: list[dict[str, Any]] | None = None, etag: bool = True) -> None:
        body = json.dumps({"DocumentIncarnation": 2, "Events": events or []}).encode()
        self.gets: Counter[str] = Counter()
        self.posts: list[list[str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # The head and the body in one write, as a real endpoint sends them: written
            # apart, Nagle held the body of each answer on a kept-alive connection until
            # the client's delayed ACK (40 ms a request, 0.5 ms on a fresh connection).
            wbufsize = 1 << 16

            def _reply(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                if etag:
                    self.send_header("ETag", '"2"')
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                if not self.path.startswith("/metadata/scheduledevents"):
                    self._reply(404, b'{"error": "not found"}')
                    return
                owner.gets[self.client_address[0]] += 1
                tag = (self.headers.get("If-None-Match") or "").removeprefix("W/").strip('"')
                fresh = tag != "2" or not etag
                self._reply(200 if fresh else 304, body if fresh else b"")

            def do_POST(self) -> None:
                sent = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.posts.append([r["EventId"] for r in sent["StartRequests"]])
                self._reply(200, b"")

            def log_message(self, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a poller stopped mid-answer

        self._server = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def approved(self) -> list[str]:
        return [i for post in list(self.posts) for i in post]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def big_document(root: Path, count: int) -> dict[str, Any]:
    """One agent, a document of ``count`` events for its VM: see the module's docstring."""
    workdir = root / f"big-{count}"
    workdir.mkdir()
    not_before = formatdate(time.time() + 600, usegmt=True)
    events = [{"EventId": f"{n:08x}-0000-4000-8000-000000000000", "EventStatus": "Scheduled",
               "EventType": "Reboot", "ResourceType": "VirtualMachine", "Resources": ["web-0"],
               "NotBefore": not_before, "Description": "", "EventSource": "Platform",
               "DurationInSeconds": -1} for n in range(count)]  # fmt: skip
    endpoint = FakeEndpoint(events)
    port = free_port()
    config = workdir / "agent.toml"
    config.write_text(f'vm_name = "web-0"\npoll_interval = {POLL}\n'
                      f'state_path = "{workdir / "state.db"}"\n'
                      f'metrics_bind = "127.0.0.1:{port}"\n'
                      '[[rules]]\nevent_types = ["Reboot"]\n'
                      'approval = "after-handlers"\n')  # fmt: skip
    env = {**os.environ, "FOREWARN_IMDS_URL": endpoint.url}
    agent = subprocess.Popen(
        [sys.executable, "-m", "forewarn", "agent", "run", "-c", str(config)],
        env=env, stderr=(workdir / "agent.log").open("w"),
    )  # fmt: skip
    import httpx

    health = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60, trust_env=False)
    try:
        while not endpoint.gets:  # started, identity known, the document taken
            if agent.poll() is not None:
                raise RuntimeError(f"the agent exited; see {workdir}/agent.log")
            time.sleep(0.005)
        begun, cpu_before, worst = time.monotonic(), cpu_seconds(agent.pid), 0.0
        while len(endpoint.approved()) < count:
            asked = time.monotonic()
            health.get("/healthz").raise_for_status()
            worst = max(worst, time.monotonic() - asked)
            if asked - begun > 600:
                raise RuntimeError(f"{len(endpoint.approved())} of {count} approved in 600 s")
            time.sleep(0.1)
        elapsed = time.monotonic() - begun
        cpu = cpu_seconds(agent.pid) - cpu_before
        polls = endpoint.gets.total() - 1
        peak = rss_mb(agent.pid)[1]
        stopping = time.monotonic()
        agent.send_signal(signal.SIGTERM)
        agent.wait(timeout=120)
        stop = time.monotonic() - stopping
    finally:
        health.close()
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        endpoint.close()
    ids = endpoint.approved()
    return {"events": count, "seconds": elapsed, "cpu": cpu, "posts": len(endpoint.posts),
            "once": len(ids) == len(set(ids)) == count, "worst_healthz": worst,
            "polls": polls, "peak_mb": peak, "stop": stop}  # fmt: skip


def report_big(result: dict[str, Any]) -> None:
    print(f"{result['events']} events: all approved in {result['seconds']:.1f} s "
          f"({result['seconds'] / result['events'] * 1000:.2f} ms each, "
          f"CPU {result['cpu']:.1f} s), {result['posts']} POSTs, "
          f"each once: {result['once']}; /healthz worst {result['worst_healthz'] * 1000:.0f} ms; "
          f"{result['polls']} polls meanwhile; peak RSS {result['peak_mb']:.0f} MB; "
          f"SIGTERM to exit {result['stop']:.2f} s")  # fmt: skip


# ------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=30, help="detection rounds")
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--per-process", type=int, default=20)
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it (logs)")
    parser.add_argument(
        "--big-document",
        type=int,
        metavar="N",
        help="only: approve a document of N events (and 1,000, the baseline)",
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        asyncio.run(_run_many(args.child))
        return 0
    if args.big_document:
        with tempfile.TemporaryDirectory(prefix="agent-bench-") as tmp:
            base, big = (big_document(Path(tmp), n) for n in (1000, args.big_document))
        report_big(base)
        report_big(big)
        per_event = [r["cpu"] / r["events"] for r in (base, big)]  # wall time follows load
        ok = (base["once"] and big["once"] and big["worst_healthz"] <= 1.0
              and per_event[1] <= 2 * per_event[0])  # fmt: skip
        print("PASS" if ok else "FAIL: big document")
        return 0 if ok else 1
    failures = []
    with tempfile.TemporaryDirectory(prefix="agent-bench-") as tmp:
        root = Path(tmp)
        if args.keep is not None:
            args.keep.mkdir(parents=True)
            root = args.keep
        latencies, (rss, hwm) = detection(root, args.events)
        median = statistics.median(latencies)
        p90 = sorted(latencies)[int(0.9 * (len(latencies) - 1))]
        print(f"detection -> first handler start, poll interval {POLL:.1f} s, "
              f"{len(latencies)} events: median {median * 1000:.0f} ms, "
              f"p90 {p90 * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms "
              f"(goal: median <= {GOAL_DETECTION * 1000:.0f} ms)")  # fmt: skip
        if median > GOAL_DETECTION:
            failures.append("detection")
        print(f"agent memory (forewarn agent run): RSS {rss:.1f} MB, peak {hwm:.1f} MB "
              f"(goal: <= {GOAL_RSS_MB:.0f} MB)")  # fmt: skip
        if hwm > GOAL_RSS_MB:
            failures.append("memory")
        result = fleet(root, args.agents, args.per_process)
        print(f"fleet: {result['agents']} agents in {result['processes']} processes, "
              f"all ready in {result['startup']:.1f} s; "
              f"{result['events']} user reboots, {result['seconds']:.0f} s: "
              f"seen {result['seen']}, handled ok {result['handled_ok']}, "
              f"approved {result['approved']}, saw Started {result['saw_started']}, "
              f"missed {result['missed']}, gone {result['gone']}, "
              f"recovered {result['recovered']}; "
              f"RSS {result['rss_per_process_mb']:.0f} MB per process, "
              f"{result['cpu_seconds']:.0f} s of CPU in all (start-up included)")  # fmt: skip
        complete = result["events"]
        if not (result["saw_started"] == result["recovered"] == complete == result["agents"]
                and result["missed"] == 0):  # fmt: skip
            failures.append("fleet")
    print("PASS" if not failures else f"FAIL: {', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
