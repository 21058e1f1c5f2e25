"""Run ``forewarn agent run`` as a real process and read its JSON log lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.serverproc import free_port

__all__ = ["HERE", "AgentProcess", "Recorder", "handler_argv", "running"]

HERE = Path(__file__).parent


def handler_argv(log: Path, name: str, *options: str) -> str:
    """A TOML argv running the recording handler."""
    argv = [sys.executable, str(HERE / "record_handler.py"), str(log), name, *options]
    return json.dumps(argv)


class Recorder:
    """Reads what the recording handlers wrote."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def entries(self, **match: Any) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        lines = [json.loads(line) for line in self.path.read_text().splitlines() if line]
        return [e for e in lines if all(e.get(k) == v for k, v in match.items())]

    def wait(self, timeout: float = 60, count: int = 1, **match: Any) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            found = self.entries(**match)
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                pytest.fail(f"no {count} handler record(s) {match} in {timeout}s: {self.entries()}")
            time.sleep(0.02)


class AgentProcess:
    """``forewarn agent run -c CONFIG`` with a metrics port of its own.

    With ``config=None`` no file at all: every setting from ``env`` (as in a DaemonSet)."""

    def __init__(
        self, workdir: Path, config: str | None, endpoint: str, env: dict[str, str] | None = None
    ):
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.metrics_port = free_port()
        self.config_path: Path | None = workdir / "agent.toml"
        head = (
            f'state_path = "{workdir / "state.db"}"\n'
            f'metrics_bind = "127.0.0.1:{self.metrics_port}"\n'
        )
        placed = {}
        if config is None:
            self.config_path = None
            placed = {
                "FOREWARN_AGENT_STATE_PATH": str(workdir / "state.db"),
                "FOREWARN_AGENT_METRICS_BIND": f"127.0.0.1:{self.metrics_port}",
            }
        else:
            assert self.config_path is not None
            self.config_path.write_text(head + textwrap.dedent(config))
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("FOREWARN_AGENT_")}
        self.env = {
            **inherited,
            "FOREWARN_IMDS_URL": endpoint,
            "PYTHONUNBUFFERED": "1",
            "PYTHONFAULTHANDLER": "1",  # SIGABRT prints every thread's stack (``post_mortem``)
            **placed,
            **(env or {}),
        }
        #: What runs ``forewarn`` (its arguments follow).
        self.command: list[str] = [sys.executable, "-m", "forewarn"]
        self.proc: subprocess.Popen[str] | None = None
        self.lines: list[dict[str, Any]] = []
        self.raw: list[str] = []

    def start(self, wait_ready: bool = True) -> AgentProcess:
        self.lines, self.raw = [], []
        config = ["-c", str(self.config_path)] if self.config_path is not None else []
        self.proc = subprocess.Popen(
            [*self.command, "agent", "run", *config],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=self.env,
        )  # fmt: skip
        threading.Thread(target=self._pump, args=(self.proc,), daemon=True).start()
        if wait_ready:
            self.wait_log("identity known")
        return self

    def _pump(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self.raw.append(line.rstrip("\n"))
            with suppress(ValueError):
                self.lines.append(json.loads(line))

    def logs(self, event: str | None = None, **match: Any) -> list[dict[str, Any]]:
        return [
            line
            for line in list(self.lines)
            if (event is None or line.get("event") == event)
            and all(line.get(k) == v for k, v in match.items())
        ]

    def wait_log(self, event: str, timeout: float = 60, **match: Any) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            found = self.logs(event, **match)
            if found:
                return found[0]
            if self.proc is not None and self.proc.poll() is not None:
                pytest.fail(f"agent exited ({self.proc.returncode}) waiting for {event!r}: "
                            f"{self.raw[-20:]}")  # fmt: skip
            if time.monotonic() > deadline:
                pytest.fail(f"no log line {event!r} {match} in {timeout}s: {self.raw[-20:]}")
            time.sleep(0.02)

    def get(self, path: str) -> httpx.Response:
        return httpx.get(f"http://127.0.0.1:{self.metrics_port}{path}", timeout=5, trust_env=False)

    def metric(self, name: str, **labels: str) -> float:
        """A sample's value from /metrics (0 when absent)."""
        text = self.get("/metrics").text
        for line in text.splitlines():
            if line.startswith("#") or not line.startswith(name):
                continue
            series, _, value = line.rpartition(" ")
            head, _, rest = series.partition("{")
            if head != name:
                continue
            found = dict(pair.split("=", 1) for pair in rest.rstrip("}").split(",") if "=" in pair)
            if all(found.get(k) == f'"{v}"' for k, v in labels.items()):
                return float(value)
        return 0.0

    def post_mortem(self, lines: int = 40) -> str:
        """How the agent is, for a failure message: its exit code, or (still running) the
        stack of every thread it had, dumped by SIGABRT through ``PYTHONFAULTHANDLER``."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGABRT)
            with suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
            time.sleep(0.5)  # the pump reads the last lines
            how = "was running (stacks on SIGABRT)"
        else:
            how = f"had exited ({self.proc.returncode})"
        tail = "\n".join(self.raw[-lines:])
        return f"pid {self.proc.pid} {how}; its last output:\n{tail}"

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@contextmanager
def running(agents: list[AgentProcess]) -> Iterator[None]:
    try:
        yield
    finally:
        for agent in agents:
            if agent.alive():
                agent.stop(signal.SIGKILL)
