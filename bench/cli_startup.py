"""How long the ``forewarn`` command takes to start and finish, against Python itself.

Times, from process start to exit, ``forewarn --version``, ``forewarn events --url`` (a
VM reading the metadata endpoint of a running ``forewarn serve``), ``forewarn agent
check-config`` (the example config) and ``forewarn events`` (the control API), each many
times, interleaved with the baselines of the same run: ``python -c pass`` and
``python -c "import click"``. It prints the median and fastest wall time, the median CPU
time, the ratios to both baselines, the modules the process loaded and its peak RSS.

    python bench/cli_startup.py [--runs 30] [--forewarn-src DIR]

``--forewarn-src`` times another tree (the ``src`` of ``git archive COMMIT``), as the
other benchmarks do; the server it asks is always the installed tree's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
AGENT_CONFIG = REPO / "examples" / "agent" / "agent.toml"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from loadgen import control_call, free_port, wait_for_port  # noqa: E402

#: Prepended to the measured program in the runs that count: at exit, the modules loaded
#: and the peak RSS of this process image (VmHWM; ru_maxrss would count the parent's pages
#: before exec).
COUNTER = (
    "import atexit, sys\n"
    "def _count():\n"
    "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
    "    sys.stderr.write(f'\\nMODULES {len(sys.modules)} {hwm[0].split()[1]}\\n')\n"
    "atexit.register(_count)\n"
)
#: ``python -m forewarn ARGS`` as a ``-c`` program (so the counter can go first).
FOREWARN = (
    "import runpy, sys\n"
    "sys.argv = ['forewarn', *sys.argv[1:]]\n"
    "runpy.run_module('forewarn', run_name='__main__')\n"
)


@dataclass
class Case:
    """One command: its argv (after the interpreter), and what its runs measured."""

    label: str
    code: str  # the program, as ``python -c`` runs it
    args: list[str]
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    modules: int = 0

    def argv(self, count: bool = False) -> list[str]:
        return [sys.executable, "-c", (COUNTER if count else "") + self.code, *self.args]


def run_once(case: Case, env: dict[str, str]) -> None:
    """One run of ``case``: wall time and CPU time of that process alone."""
    started = time.perf_counter()
    proc = subprocess.Popen(case.argv(), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    case.wall.append(time.perf_counter() - started)
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{case.label} failed ({proc.returncode}): {stderr.strip()}")
    case.cpu.append(usage.ru_utime + usage.ru_stime)


def count_modules(case: Case, env: dict[str, str]) -> None:
    """One run through ``COUNTER``: the modules loaded and the peak RSS."""
    proc = subprocess.run(case.argv(count=True), env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    counts = [line for line in proc.stderr.splitlines() if line.startswith("MODULES ")]
    if proc.returncode != 0 or not counts:
        raise SystemExit(f"{case.label} failed ({proc.returncode}): {proc.stderr.strip()}")
    _, modules, hwm_kib = counts[-1].split()
    case.modules = int(modules)
    case.rss_mb.append(int(hwm_kib) / 1024)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="runs of each command")
    parser.add_argument("--forewarn-src", type=Path, help="time this src tree instead")
    args = parser.parse_args(argv)
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}
    for name in ("FOREWARN_IMDS_URL", "SCHEDULEDEVENTSIP", "FOREWARN_CONTROL", "FOREWARN_TOKEN"):
        env.pop(name, None)
    if args.forewarn_src is not None:
        if not (args.forewarn_src / "forewarn" / "__init__.py").is_file():
            parser.error(f"{args.forewarn_src} holds no forewarn package (give its src)")
        env["PYTHONPATH"] = str(args.forewarn_src.resolve())
    imds, control = free_port(), free_port()
    with tempfile.TemporaryDirectory() as tmp:
        server = subprocess.Popen(
            [sys.executable, "-m", "forewarn", "serve", "--db", f"{tmp}/forewarn.db",
             "--imds-bind", f"127.0.0.1:{imds}", "--control-bind", f"127.0.0.1:{control}",
             "--clock", "virtual", "--enablement", "always", "--rate-limit", "0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            wait_for_port(control, proc=server)
            wait_for_port(imds, proc=server)
            status, _, _ = control_call(control, "POST", "/api/v1/operations",
                                        {"kind": "user-reboot", "target": "web-0"})  # fmt: skip
            assert status == 201, status
            imds_url, control_url = f"http://127.0.0.1:{imds}", f"http://127.0.0.1:{control}"
            cases = [
                Case("python -c pass", "pass", []),
                Case("python -c 'import click'", "import click", []),
                Case("forewarn --version", FOREWARN, ["--version"]),
                Case("forewarn events --url", FOREWARN, ["events", "--url", imds_url]),
                Case(
                    "forewarn agent check-config",
                    FOREWARN,
                    ["agent", "check-config", "--config", str(AGENT_CONFIG), "--skip-programs"],
                ),
                Case(
                    "forewarn events (control API)",
                    FOREWARN,
                    ["--control", control_url, "events"],
                ),
            ]
            report(cases, args, env)
        finally:
            server.terminate()
            server.wait(timeout=30)
    return 0


def report(cases: list[Case], args: argparse.Namespace, env: dict[str, str]) -> None:
    source = args.forewarn_src or "the installed tree"
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"timing {source}; {args.runs} runs each, interleaved; {os.cpu_count()} CPUs, "
          f"load {load}")  # fmt: skip
    for case in cases:
        run_once(case, env)  # warm the page cache and __pycache__; not counted
        case.wall, case.cpu = [], []
        for _ in range(min(3, args.runs)):
            count_modules(case, env)
    for _ in range(args.runs):
        for case in cases:
            run_once(case, env)
    python, click = (statistics.median(c.wall) for c in cases[:2])
    print(f"{'command':<31} {'median':>8} {'fastest':>8} {'CPU':>7} {'x python':>9} "
          f"{'x click':>8} {'modules':>8} {'RSS':>7}")  # fmt: skip
    for case in cases:
        wall = statistics.median(case.wall)
        print(f"{case.label:<31} {wall * 1000:6.0f}ms {min(case.wall) * 1000:6.0f}ms "
              f"{statistics.median(case.cpu) * 1000:5.0f}ms {wall / python:9.1f} "
              f"{wall / click:8.1f} {case.modules:8d} "
              f"{statistics.median(case.rss_mb):4.0f} MB")  # fmt: skip
    print(f"load after the run {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(main())
