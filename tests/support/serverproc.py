"""Start a real ``forewarn serve`` process on free loopback ports, for end-to-end tests."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from tests.support.ports import free_port

__all__ = ["VIRTUAL", "ServerProcess", "event_status", "free_port", "trigger"]

#: The usual options of a test server: a virtual clock, every scope's Scheduled Events
#: on from the start, no rate limit (the tests poll).
VIRTUAL = ("--clock", "virtual", "--enablement", "always", "--rate-limit", "0")


class ServerProcess:
    """``forewarn serve`` as a child process; ``start()`` waits until it answers."""

    def __init__(
        self, db: Path, args: Sequence[str] = (), *, open_files: int | None = None
    ) -> None:
        """``open_files``: the child's RLIMIT_NOFILE, soft and hard (None: inherited)."""
        self.db = db
        self.args = list(args)
        self.open_files = open_files
        self.imds_port = free_port()
        self.control_port = free_port()
        self.proc: subprocess.Popen[str] | None = None
        self.banner: list[str] = []

    @property
    def imds_url(self) -> str:
        return f"http://127.0.0.1:{self.imds_port}"

    @property
    def control_url(self) -> str:
        return f"http://127.0.0.1:{self.control_port}"

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "forewarn", "serve",
            "--db", str(self.db),
            "--imds-bind", f"127.0.0.1:{self.imds_port}",
            "--control-bind", f"127.0.0.1:{self.control_port}",
            *self.args,
        ]  # fmt: skip

    def start(self, timeout: float = 60.0) -> ServerProcess:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        limit = self.open_files

        def limit_open_files() -> None:
            if limit is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

        self.proc = subprocess.Popen(
            self.command(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            preexec_fn=limit_open_files if limit is not None else None,
        )
        # the output read on one thread from the start (so the child never blocks on a
        # full pipe): a server that hangs before its banner, printing nothing, fails the
        # start after ``timeout`` and is killed, not a read of its pipe blocking for ever
        stream = self.proc.stdout
        assert stream is not None
        banner_done = threading.Event()  # the banner's last line read, or the output's end

        def pump() -> None:
            for line in stream:
                self.banner.append(line.rstrip("\n"))
                if "control API on" in line:
                    banner_done.set()
            banner_done.set()

        threading.Thread(target=pump, daemon=True).start()
        ended = banner_done.wait(timeout)
        if ended and any("control API on" in b for b in self.banner):
            return self
        self.proc.kill()
        self.proc.wait(timeout=20)
        if not ended:
            raise RuntimeError(f"server did not start in {timeout}s: {self.banner}")
        raise RuntimeError(f"server exited early: {self.banner}")

    def kill(self, sig: int = signal.SIGKILL) -> int:
        """Send ``sig`` and wait for the process to end; returns its exit code."""
        assert self.proc is not None
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=20)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill(signal.SIGTERM)

    def control(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Call the control API."""
        with httpx.Client(base_url=self.control_url, timeout=10, trust_env=False) as client:
            return client.request(method, path, **kwargs)

    def imds(
        self,
        method: str = "GET",
        path: str = "/metadata/scheduledevents",
        *,
        vm_address: str | None = None,
        api_version: str | None = "2020-07-01",
        headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> httpx.Response:
        """Call the metadata endpoint as the VM at ``vm_address`` (source address)."""
        transport = httpx.HTTPTransport(local_address=vm_address) if vm_address else None
        params = {"api-version": api_version} if api_version else {}
        hdrs = {"Metadata": "true", **(headers or {})}
        with httpx.Client(transport=transport, timeout=10, trust_env=False) as client:
            return client.request(
                method, self.imds_url + path, params=params, headers=hdrs, **kwargs
            )


def trigger(server: ServerProcess, kind: str, target: str) -> str:
    """Start ``kind`` on ``target`` through the control API; its one event id."""
    response = server.control("POST", "/api/v1/operations", json={"kind": kind, "target": target})
    assert response.status_code == 201, response.text
    (event_id,) = response.json()["event_ids"]
    return str(event_id)


def event_status(server: ServerProcess, event_id: str) -> str:
    """An event's status as the control API reports it."""
    response = server.control("GET", f"/api/v1/events/{event_id}")
    assert response.status_code == 200, response.text
    return str(response.json()["status"])
