"""The agent's footprint on every VM (issue 31): CPU per unchanged poll, memory, start-up.

    .venv/bin/python bench/agent_footprint.py [--seconds 60] [--interval 0.1]
        [--events 10000] [--soak-polls 86400] [--runs 15] [--install wheel|zipapp|both]
        [--vm-venv DIR] [--pyz FILE] [--only NAME,...]

Every figure is printed with the baseline measured in the same run and the ratio (or
difference) to it; absolute times follow the machine's load, ratios much less so. Every
process measured runs in a VM install, so it holds what a VM's would, not the development
venv's extra libraries; ``--install`` picks which (both by default, one after the other):

- ``wheel``: a venv holding the wheel built from a copy of this checkout, with the redis
  extra for coordination (``--vm-venv``: one already built);
- ``zipapp``: ``forewarn-vm.pyz`` built from that wheel by ``.ci/vm_zipapp.py`` as
  ``.ci/release`` builds it (``--pyz``: one already built), every VM-side process run as
  ``python -I forewarn-vm.pyz ...`` by the interpreter of a venv holding nothing (no pip),
  and every baseline by that interpreter under ``-I`` too. The zipapp has no extras, so its
  second poll window has metrics and Kubernetes on but no coordination (which needs redis).

1. ``poll``: ``forewarn agent run`` (one rule, an exec handler, the default structured
   logs) and a bare stdlib loop (``http.client``, one kept-alive connection, a plain GET
   of the same document, body read, no parsing) poll one endpoint side by side at the same
   interval for ``--seconds``; each one's CPU (user + system, /proc) over that window,
   divided by the GETs the endpoint counted from its address. Twice: the default
   configuration, then with coordination (redis), metrics and Kubernetes on. The endpoint
   is a stdlib server in this process (not measured) that answers as the contract says:
   an ETag on every 200, 304 to a matching If-None-Match. A third time with the default
   configuration against an endpoint that sends no ETag (a whole document every poll:
   the agent compares the bytes before parsing). Goal: agent <= 1.5 x baseline.
2. ``memory``: that default agent's RSS and private memory (smaps_rollup) after the
   window, beside the baseline loop's and an idle interpreter that imported only what an
   asyncio agent cannot do without (asyncio, sqlite3): the floor. Goal: RSS <= 25 MB,
   private <= 15 MB.
3. ``events``: the agent's RSS once it approved every event of a document of 1,000, then
   ``--events`` events (a rule that approves with no handler; the events stay live);
   growth per event between the two. Every event approved exactly once. Goal: a few KB.
4. ``soak``: one agent in a child process whose poll sleeps take no time (a day of polls
   at one a second is ``--soak-polls 86400``), against the same unchanged document; its
   RSS after the first tenth of the polls and at the end. Goal: no growth (<= 256 KB).
5. ``startup``: each VM command in that install beside ``python -c pass`` of the same
   interpreter, interleaved, ``--runs`` each: median wall time, the difference (``watch``:
   to its first line), and the CPU each used (user + system) beside ``python -c pass``'s,
   which a busy machine inflates less than wall time; and beside ``python -c "import
   argparse, dataclasses, json, http.client"``, the standard library a command may use
   plainly. Goal: <= 0.15 s more than ``python -c pass``, judged on CPU (a loaded machine
   inflates wall time far more; a wall time over it is noted). A command that fails stops
   the bench (it would time as fast). In the zipapp every one runs under ``-I``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_bench import FakeEndpoint, cpu_seconds, free_port

REPO = Path(__file__).resolve().parents[1]
FAKE_KUBECTL = REPO / "tests" / "agent" / "fake_kubectl"
AGENT_ADDRESS = "127.0.0.2"
BASELINE_ADDRESS = "127.0.0.3"
GOAL_POLL_RATIO = 1.5
GOAL_RSS_MB, GOAL_PRIVATE_MB = 25.0, 15.0
GOAL_STARTUP_S = 0.15  # over `python -c pass` (issue 36: the standard library, used plainly)
GOAL_SOAK_KB = 256
SECTIONS = ("poll", "memory", "events", "soak", "startup")
INSTALLS = ("wheel", "zipapp")
VM_ZIPAPP = REPO / ".ci" / "vm_zipapp.py"
#: Each agent's stderr, by pid: what a poller that exited said.
AGENT_LOGS: dict[int, Path] = {}


@dataclass(frozen=True)
class Install:
    """One VM install: how to run its interpreter (``python``: argv, flags included) and
    its VM commands (``vm``: argv before ``agent run ...``); ``pyz``: the zipapp, if one."""

    name: str
    python: list[str]
    vm: list[str]
    pyz: str | None = None


#: The bare loop every poll figure is compared with.
BASELINE = """
import http.client, sys, time
host, port, source, interval = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
conn = http.client.HTTPConnection(host, port, source_address=(source, 0))
while True:
    conn.request("GET", "/metadata/scheduledevents?api-version=2020-07-01",
                 headers={"Metadata": "true"})
    conn.getresponse().read()
    time.sleep(interval)
"""

#: An idle interpreter holding only what an asyncio agent with a state file must import.
FLOOR = "import asyncio, sqlite3, sys, time; print('ready', flush=True); time.sleep(3600)"


# ------------------------------------------------------------------ measuring processes


def memory_mb(pid: int) -> tuple[float, float]:
    """(RSS, private) of ``pid`` in MB, from smaps_rollup."""
    values = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, _, rest = line.partition(":")
        values[key] = int(rest.split()[0])
    return values["Rss"] / 1024, (values["Private_Clean"] + values["Private_Dirty"]) / 1024


def stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ------------------------------------------------------------------ the endpoint


@contextmanager
def endpoint(
    events: list[dict[str, Any]] | None = None, etag: bool = True
) -> Iterator[FakeEndpoint]:
    running = FakeEndpoint(events, etag)
    try:
        yield running
    finally:
        running.close()


# ------------------------------------------------------------------ agents


def agent_config(
    workdir: Path, interval: float, full: bool = False, coordination: bool = True
) -> Path:
    """One rule and an exec handler, default logs; ``full``: metrics, Kubernetes and (with
    ``coordination``) coordination over redis."""
    lines = [
        'vm_name = "web-0"',
        f'local_address = "{AGENT_ADDRESS}"',
        f"poll_interval = {interval}",
        f'state_path = "{workdir / "state.db"}"',
        "",
        "[handlers.prep]",
        'type = "exec"',
        'argv = ["true"]',
        "",
        "[[rules]]",
        'event_types = ["Reboot"]',
        "this_vm = true",
        'handlers = ["prep"]',
        f'approval = "{"coordinated" if full and coordination else "after-handlers"}"',
    ]
    approval = "coordinated" if coordination else "after-handlers"
    if full:
        lines[4:4] = [f'metrics_bind = "127.0.0.1:{free_port()}"', "",
                      "[kubernetes]", 'node = "node-0"',
                      f'approval = "{approval}"', ""]  # fmt: skip
    if full and coordination:  # after metrics_bind: a top-level key before any table
        lines[6:6] = ["[coordination]", 'backend = "redis"', 'url = "redis://127.0.0.1:6379/0"',
                      f'namespace = "footprint-{os.getpid()}"', ""]  # fmt: skip
    path = workdir / ("full.toml" if full else "agent.toml")
    path.write_text("\n".join(lines) + "\n")
    return path


def start_agent(install: Install, config: Path, url: str, workdir: Path) -> subprocess.Popen[bytes]:
    bin_dir = workdir / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "kubectl").write_bytes(FAKE_KUBECTL.read_bytes())
    (bin_dir / "kubectl").chmod(0o755)
    env = {**os.environ, "FOREWARN_IMDS_URL": url, "PATH": f"{bin_dir}:{os.environ['PATH']}",
           "FAKE_KUBECTL_LOG": str(workdir / "kubectl.log")}  # fmt: skip
    agent = subprocess.Popen(
        [*install.vm, "agent", "run", "-c", str(config)],
        env=env, stderr=(workdir / f"{config.stem}.log").open("w"),
    )  # fmt: skip
    AGENT_LOGS[agent.pid] = workdir / f"{config.stem}.log"
    return agent


def wait_for_gets(
    ep: FakeEndpoint, address: str, proc: subprocess.Popen[Any], count: int = 1
) -> None:
    deadline = time.monotonic() + 120
    while ep.gets[address] < count:
        if proc.poll() is not None or time.monotonic() > deadline:
            log = AGENT_LOGS.get(proc.pid)
            tail = log.read_text()[-2000:] if log else ""
            raise RuntimeError(f"the poller at {address} did not poll (exit {proc.poll()}) {tail}")
        time.sleep(0.01)


# ------------------------------------------------------------------ 1 + 2: poll CPU, memory


def side_by_side(
    install: Install, root: Path, seconds: float, interval: float, full: bool, etag: bool = True
) -> dict[str, Any]:
    workdir = root / ("poll-full" if full else "poll-default" if etag else "poll-no-etag")
    workdir.mkdir()
    config = agent_config(workdir, interval, full, coordination=install.pyz is None)
    with endpoint(etag=etag) as ep:
        agent = start_agent(install, config, ep.url, workdir)
        base = subprocess.Popen([*install.python, "-c", BASELINE, "127.0.0.1", str(ep.port),
                                 BASELINE_ADDRESS, str(interval)])  # fmt: skip
        try:
            wait_for_gets(ep, AGENT_ADDRESS, agent, 3)
            wait_for_gets(ep, BASELINE_ADDRESS, base, 3)
            time.sleep(2 * interval + 1)  # start-up done, the first document taken
            before = {p: (cpu_seconds(p.pid), ep.gets[a])
                      for p, a in ((agent, AGENT_ADDRESS), (base, BASELINE_ADDRESS))}  # fmt: skip
            load = os.getloadavg()[0]
            time.sleep(seconds)
            figures = {}
            for proc, address, name in ((agent, AGENT_ADDRESS, "agent"),
                                        (base, BASELINE_ADDRESS, "baseline")):  # fmt: skip
                cpu0, gets0 = before[proc]
                polls = ep.gets[address] - gets0
                figures[name] = {"cpu": cpu_seconds(proc.pid) - cpu0, "polls": polls,
                                 "memory": memory_mb(proc.pid)}  # fmt: skip
            if agent.poll() is not None:
                raise RuntimeError(f"the agent exited; see {workdir}")
        finally:
            stop(agent)
            stop(base)
    for f in figures.values():
        f["ms_per_poll"] = f["cpu"] / max(f["polls"], 1) * 1000
    figures["ratio"] = figures["agent"]["ms_per_poll"] / max(figures["baseline"]["ms_per_poll"],
                                                             1e-9)  # fmt: skip
    figures["load"] = (load, os.getloadavg()[0])
    return figures


def floor_memory(install: Install) -> tuple[float, float]:
    proc = subprocess.Popen([*install.python, "-c", FLOOR], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        return memory_mb(proc.pid)
    finally:
        stop(proc)


# ------------------------------------------------------------------ 3: per live event


def reboots(count: int) -> list[dict[str, Any]]:
    not_before = formatdate(time.time() + 3600, usegmt=True)
    return [{"EventId": f"{n:08x}-0000-4000-8000-000000000000", "EventStatus": "Scheduled",
             "EventType": "Reboot", "ResourceType": "VirtualMachine", "Resources": ["web-0"],
             "NotBefore": not_before, "Description": "", "EventSource": "Platform",
             "DurationInSeconds": -1} for n in range(count)]  # fmt: skip


def live_events(install: Install, root: Path, count: int, interval: float) -> dict[str, Any]:
    workdir = root / f"events-{count}"
    workdir.mkdir()
    config = workdir / "agent.toml"
    config.write_text(f'vm_name = "web-0"\npoll_interval = {interval}\n'
                      f'local_address = "{AGENT_ADDRESS}"\n'
                      f'state_path = "{workdir / "state.db"}"\n'
                      '[[rules]]\nevent_types = ["Reboot"]\n'
                      'approval = "after-handlers"\n')  # fmt: skip
    with endpoint(reboots(count)) as ep:
        agent = start_agent(install, config, ep.url, workdir)
        try:
            deadline = time.monotonic() + 900
            while len(ep.approved()) < count:
                if agent.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{len(ep.approved())} of {count} approved; see {workdir}")
                time.sleep(0.1)
            gets = ep.gets[AGENT_ADDRESS]
            wait_for_gets(ep, AGENT_ADDRESS, agent, gets + 3)  # settled: polls go on
            rss, private = memory_mb(agent.pid)
            hwm = int(Path(f"/proc/{agent.pid}/status").read_text().split("VmHWM:")[1].split()[0])
        finally:
            stop(agent)
    ids = ep.approved()
    return {"events": count, "rss": rss, "private": private, "peak": hwm / 1024,
            "once": len(ids) == len(set(ids)) == count}  # fmt: skip


# ------------------------------------------------------------------ 4: soak


async def _soak_child(config_path: str, pyz: str | None) -> None:
    """Child mode: one agent whose poll sleeps return at once, until SIGTERM (``pyz``: the
    agent of that zipapp)."""
    import asyncio

    if pyz:
        sys.path.insert(0, pyz)

    from forewarn.agent import Agent, load_config
    from forewarn.agent.logs import configure_logging

    async def no_wait(seconds: float) -> None:
        await asyncio.sleep(0)

    class Hurried(Agent):
        def _client(self) -> Any:
            client = super()._client()
            client._sleep = no_wait  # a day of once-a-second polls in minutes
            return client

    configure_logging("json", "info")
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    await Hurried(load_config(config_path, {}, {})).run(stopping)


def soak(install: Install, root: Path, polls: int) -> dict[str, Any]:
    workdir = root / "soak"
    workdir.mkdir()
    config = agent_config(workdir, 1.0)
    marks: list[tuple[int, float, float]] = []
    with endpoint() as ep:
        env = {**os.environ, "FOREWARN_IMDS_URL": ep.url}
        pyz = ["--soak-pyz", install.pyz] if install.pyz else []
        child = subprocess.Popen([*install.python, __file__, "--soak-child", str(config), *pyz],
                                 env=env, stderr=(workdir / "agent.log").open("w"))  # fmt: skip
        try:
            begun = time.monotonic()
            for step in range(1, 11):
                wait_for_gets(ep, AGENT_ADDRESS, child, polls * step // 10)
                marks.append((ep.gets[AGENT_ADDRESS], *memory_mb(child.pid)))
            elapsed = time.monotonic() - begun
            cpu = cpu_seconds(child.pid)
        finally:
            stop(child)
    log = (workdir / "agent.log").read_text().splitlines()
    return {"marks": marks, "seconds": elapsed, "cpu": cpu, "log_lines": len(log),
            "state_bytes": (workdir / "state.db").stat().st_size}  # fmt: skip


# ------------------------------------------------------------------ 5: start-up


def build_wheel(root: Path) -> Path:
    """The wheel of this checkout, built by pip from a copy of it (pip building in the
    checkout itself would leave build/ and an egg-info there)."""
    tree = root / "forewarn"
    shutil.copytree(REPO / "src", tree / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))  # fmt: skip
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, tree / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-input", "--no-deps",
                    "-w", str(root / "dist"), str(tree)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    return next((root / "dist").glob("forewarn-*.whl"))


def vm_venv(root: Path, wheel: Path) -> Path:
    """A venv holding only the wheel's VM install and the redis extra (for coordination),
    as docs/install.md installs it."""
    venv = root / "vm-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-input", f"{wheel}[redis]"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    return venv


def zipapp_install(root: Path, wheel: Path | None, pyz: Path | None) -> Install:
    """``forewarn-vm.pyz`` (built from ``wheel`` by .ci/vm_zipapp.py unless given) run by
    the interpreter of a venv holding nothing, under ``-I``."""
    if pyz is None:
        assert wheel is not None
        pyz = root / "forewarn-vm.pyz"
        subprocess.run([sys.executable, str(VM_ZIPAPP), str(wheel), str(pyz)], check=True)
    bare = root / "bare-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    python = [str(bare / "bin" / "python"), "-I"]
    return Install("zipapp", python, [*python, str(pyz)], str(pyz))


def wheel_install(venv: Path) -> Install:
    python = str(venv / "bin" / "python")
    return Install("wheel", [python], [str(venv / "bin" / "forewarn")])


def startup(install: Install, root: Path, runs: int) -> list[tuple[str, float, float, float]]:
    python, forewarn = install.python, install.vm
    workdir = root / "startup"
    workdir.mkdir()
    state = workdir / "state.db"
    config = workdir / "agent.toml"
    config.write_text(f'state_path = "{state}"\nvm_name = "web-0"\n')
    with endpoint(reboots(1)) as ep:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("FOREWARN_", "SCHEDULEDEVENTSIP", "VIRTUAL_ENV"))}  # fmt: skip
        env.update({"NO_COLOR": "1", "COLUMNS": "80"})
        subprocess.run([*python, "-c", f"import sqlite3; sqlite3.connect({str(state)!r}).close()"],
                       check=True)  # fmt: skip
        # ``agent status`` needs a state file the agent wrote: write one by a short run
        agent = subprocess.Popen([*forewarn, "agent", "run", "-c", str(config)],
                                 env={**env, "FOREWARN_IMDS_URL": ep.url},
                                 stderr=subprocess.DEVNULL)  # fmt: skip
        wait_for_gets(ep, "127.0.0.1", agent, 2)
        stop(agent)
        event = reboots(1)[0]["EventId"]
        cases: list[tuple[str, list[str], bool]] = [
            ("python -c pass", [*python, "-c", "pass"], False),
            (
                "import argparse, dataclasses, json, http.client",
                [*python, "-c", "import argparse, dataclasses, json, http.client"],
                False,
            ),
            ("forewarn --version", [*forewarn, "--version"], False),
            ("forewarn events --url", [*forewarn, "events", "--url", ep.url], False),
            ("forewarn approve --url", [*forewarn, "approve", "--url", ep.url, event], False),
            ("forewarn discover", [*forewarn, "discover", "--lease-file", "/nonexistent"], False),
            ("forewarn agent status", [*forewarn, "agent", "status", "-c", str(config)], False),
            ("forewarn watch (first line)", [*forewarn, "watch", "--url", ep.url], True),
        ]
        times: dict[str, list[float]] = {label: [] for label, _, _ in cases}
        cpu: dict[str, list[float]] = {label: [] for label, _, _ in cases}
        for lap in range(runs + 1):
            for label, argv, first_line in cases:
                used = resource.getrusage(resource.RUSAGE_CHILDREN)
                began = time.perf_counter()
                if first_line:
                    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                            stderr=subprocess.DEVNULL)  # fmt: skip
                    assert proc.stdout is not None
                    worked = bool(proc.stdout.readline())
                    took = time.perf_counter() - began
                    stop(proc)
                else:
                    worked = not subprocess.run(argv, env=env, stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL).returncode  # fmt: skip
                    took = time.perf_counter() - began
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                if not worked:  # a command that failed at once would time as fast
                    raise RuntimeError(f"{label} failed in the {install.name} install: {argv}")
                if lap:  # the first lap warms the page cache and __pycache__
                    times[label].append(took)
                    cpu[label].append(after.ru_utime + after.ru_stime
                                      - used.ru_utime - used.ru_stime)  # fmt: skip
    base = statistics.median(times["python -c pass"])
    cpu_base = statistics.median(cpu["python -c pass"])
    return [
        (label, statistics.median(t), statistics.median(t) - base,
         statistics.median(cpu[label]) - cpu_base)
        for label, t in times.items()
    ]  # fmt: skip


# ------------------------------------------------------------------ report


def measure(install: Install, root: Path, args: argparse.Namespace) -> list[str]:
    """Every section of ``--only`` for one install, printed; the goals it missed."""
    only = set(args.only.split(","))
    failures: list[str] = []
    root = root / install.name
    root.mkdir()
    print(f"== the {install.name} install: {' '.join(install.vm)} ...")
    if only & {"poll", "memory"}:
        for full, etag in ((False, True), (True, True), (False, False)):
            r = side_by_side(install, root, args.seconds, args.interval, full, etag)
            a, b = r["agent"], r["baseline"]
            name = (("coordination+metrics+kubernetes" if install.pyz is None
                     else "metrics+kubernetes (no coordination: no extras)")
                    if full else "default config"
                    if etag else "default config, an endpoint that sends no ETag")  # fmt: skip
            print(f"CPU per unchanged poll, {name}: agent {a['ms_per_poll']:.2f} ms "
                  f"({a['polls']} polls), baseline http.client loop "
                  f"{b['ms_per_poll']:.2f} ms ({b['polls']} polls): "
                  f"{r['ratio']:.2f} x (goal <= {GOAL_POLL_RATIO} x); "
                  f"load {r['load'][0]:.1f}-{r['load'][1]:.1f}")  # fmt: skip
            if r["ratio"] > GOAL_POLL_RATIO:
                failures.append(f"{install.name}: poll ({name})")
            if full or not etag:
                continue
            (rss, private), (brss, bpriv) = a["memory"], b["memory"]
            frss, fpriv = floor_memory(install)
            print(f"idle memory, default config: agent RSS {rss:.1f} MB, private "
                  f"{private:.1f} MB (goal <= {GOAL_RSS_MB:.0f} / {GOAL_PRIVATE_MB:.0f}); "
                  f"baseline loop {brss:.1f} / {bpriv:.1f} MB; floor (import asyncio, "
                  f"sqlite3) {frss:.1f} / {fpriv:.1f} MB; agent - floor "
                  f"{rss - frss:+.1f} / {private - fpriv:+.1f} MB")  # fmt: skip
            if rss > GOAL_RSS_MB or private > GOAL_PRIVATE_MB:
                failures.append(f"{install.name}: memory")
    if "events" in only:
        small, big = (live_events(install, root, n, args.interval) for n in (1000, args.events))
        per_event = (big["rss"] - small["rss"]) * 1024 / (big["events"] - small["events"])
        for r in (small, big):
            print(f"{r['events']} live events: RSS {r['rss']:.1f} MB, private "
                  f"{r['private']:.1f} MB, peak {r['peak']:.1f} MB; each approved "
                  f"once: {r['once']}")  # fmt: skip
        print(f"growth per live event: {per_event:.2f} KB (baseline: 1,000 events)")
        if not (small["once"] and big["once"]):
            failures.append(f"{install.name}: approved once")
    if "soak" in only:
        r = soak(install, root, args.soak_polls)
        (p1, rss1, _), (pn, rssn, privn) = r["marks"][0], r["marks"][-1]
        growth = (rssn - rss1) * 1024
        print(f"soak: {pn} polls of an unchanged document in {r['seconds']:.0f} s "
              f"({r['cpu'] / pn * 1000:.2f} ms CPU each, start-up included): RSS "
              f"{rss1:.1f} MB after {p1}, {rssn:.1f} MB (private {privn:.1f}) after {pn}: "
              f"{growth:+.0f} KB (goal <= {GOAL_SOAK_KB} KB); {r['log_lines']} log lines, "
              f"state file {r['state_bytes']} bytes")  # fmt: skip
        print("  RSS MB by polls: "
              + ", ".join(f"{n}: {m:.1f}" for n, m, _ in r["marks"]))  # fmt: skip
        if growth > GOAL_SOAK_KB:
            failures.append(f"{install.name}: soak")
    if "startup" in only:
        rows = startup(install, root, args.runs)
        print(f"start-up, {install.name} install, {args.runs} runs each, interleaved:")
        stdlib_alone = rows[1][2]
        print(f"  {'command':<30} {'median':>9} {'- pass':>9} {'- stdlib':>9} "
              f"{'CPU - pass':>11}")  # fmt: skip
        for label, median, extra, cpu_extra in rows:
            over_stdlib = (extra - stdlib_alone) * 1000
            print(f"  {label:<30} {median * 1000:6.0f} ms {extra * 1000:+6.0f} ms "
                  f"{over_stdlib:+6.0f} ms {cpu_extra * 1000:+8.0f} ms")  # fmt: skip
            if not label.startswith("forewarn"):
                continue
            if cpu_extra > GOAL_STARTUP_S:
                failures.append(f"{install.name}: startup CPU {label}")
            elif extra > GOAL_STARTUP_S:  # CPU within: the wall time waited on a busy machine
                print(
                    f"    (wall time over the goal, its CPU within; load {os.getloadavg()[0]:.1f})"
                )
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60, help="poll window")
    parser.add_argument("--interval", type=float, default=0.1, help="both pollers' interval")
    parser.add_argument("--events", type=int, default=10000)
    parser.add_argument("--soak-polls", type=int, default=86400)
    parser.add_argument("--runs", type=int, default=15, help="start-up runs of each command")
    parser.add_argument("--install", choices=(*INSTALLS, "both"), default="both",
                        help="which VM install the processes run in")  # fmt: skip
    parser.add_argument("--vm-venv", type=Path,
                        help="a wheel's VM install, redis extra (default: build one)")  # fmt: skip
    parser.add_argument("--pyz", type=Path, help="a forewarn-vm.pyz (default: build one)")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"of {','.join(SECTIONS)}")
    parser.add_argument("--soak-child", help=argparse.SUPPRESS)
    parser.add_argument("--soak-pyz", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.soak_child:
        import asyncio

        asyncio.run(_soak_child(args.soak_child, args.soak_pyz))
        return 0
    chosen = INSTALLS if args.install == "both" else (args.install,)
    failures: list[str] = []
    print(f"{os.cpu_count()} CPUs, load {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="agent-footprint-") as tmp:
        root = Path(tmp)
        needs_wheel = ("wheel" in chosen and args.vm_venv is None) or (
            "zipapp" in chosen and args.pyz is None
        )
        wheel = build_wheel(root) if needs_wheel else None
        for name in chosen:
            if name == "wheel":
                install = wheel_install(args.vm_venv or vm_venv(root, wheel))  # type: ignore[arg-type]
            else:
                install = zipapp_install(root, wheel, args.pyz)
            failures += measure(install, root, args)
    print(f"load after {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("PASS" if not failures else f"FAIL: {', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
