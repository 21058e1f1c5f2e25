"""Helpers of the record and replay tests: a replay as a real process, polled over HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.support.serverproc import free_port

LATEST = "2020-07-01"


@dataclass
class ReplayProcess:
    """``forewarn replay ARGS`` on a free port; ``lines`` is what it printed so far."""

    args: Sequence[str]
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[str] | None = None
    started_at: float = 0.0
    lines: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ReplayProcess:
        command = [
            sys.executable, "-m", "forewarn", "replay", *self.args,
            "--imds-bind", f"127.0.0.1:{self.port}",
        ]  # fmt: skip
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if "metadata endpoint on" in line:
                break
        else:
            raise RuntimeError(f"replay did not start: {self.lines}")
        return self

    def get(self, api_version: str | None = LATEST, **headers: str) -> httpx.Response:
        params = {"api-version": api_version} if api_version else {}
        with httpx.Client(timeout=10, trust_env=False) as client:
            return client.get(
                self.url + "/metadata/scheduledevents",
                params=params,
                headers={"Metadata": "true", **headers},
            )

    def post(self, body: Any, api_version: str = LATEST) -> httpx.Response:
        with httpx.Client(timeout=10, trust_env=False) as client:
            return client.post(
                self.url + "/metadata/scheduledevents",
                params={"api-version": api_version},
                headers={"Metadata": "true"},
                json=body,
            )

    def watch(self, until: int, timeout: float = 60) -> list[tuple[float, bytes]]:
        """Poll until incarnation ``until`` shows: each distinct body and when it was
        first seen (monotonic seconds since the process was started)."""
        seen: list[tuple[float, bytes]] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            response = self.get()
            assert response.status_code == 200, response.text
            if not seen or seen[-1][1] != response.content:
                seen.append((time.monotonic() - self.started_at, response.content))
            if response.json()["DocumentIncarnation"] >= until:
                return seen
            time.sleep(0.02)
        raise AssertionError(f"incarnation {until} never came: {seen}")

    def finish(self, timeout: float = 30) -> list[str]:
        """Wait for the process to end by itself (``--linger``); everything it printed."""
        assert self.proc is not None and self.proc.stdout is not None
        rest, _ = self.proc.communicate(timeout=timeout)
        self.lines.extend(rest.splitlines())
        return self.lines

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.communicate(timeout=20)


@pytest.fixture
def start_replay() -> Iterator[Any]:
    """Start ``forewarn replay`` processes; all are stopped after the test."""
    started: list[ReplayProcess] = []

    def start(*args: str) -> ReplayProcess:
        replay = ReplayProcess(args).start()
        started.append(replay)
        return replay

    yield start
    for replay in started:
        replay.stop()
