"""Fixtures of the agent tests: agent processes that are always stopped, a recorder."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agent.agentproc import AgentProcess, Recorder
from tests.support.serverproc import ServerProcess


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: long agent end-to-end test (FOREWARN_SLOW_TESTS=1)")


@pytest.fixture
def recorder(tmp_path: Path) -> Recorder:
    return Recorder(tmp_path / "handlers.jsonl")


@pytest.fixture
def start_agent(tmp_path: Path) -> Iterator[Callable[..., AgentProcess]]:
    """Start agents (``name``: a work dir of its own); all are killed after the test."""
    agents: list[AgentProcess] = []

    def start(
        name: str,
        config: str | None,
        endpoint: str,
        env: dict[str, str] | None = None,
        wait_ready: bool = True,
    ) -> AgentProcess:
        agent = AgentProcess(tmp_path / name, config, endpoint, env)
        agents.append(agent)
        return agent.start(wait_ready=wait_ready)

    yield start
    for agent in agents:
        if agent.alive():
            agent.stop(signal.SIGKILL)


class Fleet:
    """A running ``forewarn serve`` (virtual clock) seen through its control API."""

    def __init__(self, server: ServerProcess) -> None:
        self.server = server
        self.url = server.imds_url
        topology = self.call("GET", "/api/v1/topology")
        self.address = {vm["name"]: vm["address"] for s in topology["scopes"] for vm in s["vms"]}
        self.host = {vm["name"]: vm["host"] for s in topology["scopes"] for vm in s["vms"]}

    def call(self, method: str, path: str, expect: int = 200, **kw: Any) -> Any:
        response = self.server.control(method, path, **kw)
        assert response.status_code == expect, (method, path, response.text)
        return response.json()

    def trigger(self, kind: str, target: str) -> dict[str, Any]:
        op: dict[str, Any] = self.call(
            "POST", "/api/v1/operations", expect=201, json={"kind": kind, "target": target}
        )
        return op

    def event(self, event_id: str) -> dict[str, Any] | None:
        response = self.server.control("GET", f"/api/v1/events/{event_id}")
        if response.status_code == 404:
            return None
        assert response.status_code == 200, response.text
        event: dict[str, Any] = response.json()
        return event

    def status(self, event_id: str) -> str | None:
        """Scheduled, Started, or None once the event is gone."""
        event = self.event(event_id)
        return None if event is None else str(event["status"])

    def advance(self, seconds: float) -> None:
        self.call("POST", "/api/v1/clock/advance", json={"seconds": seconds})

    def now(self) -> float:
        now: float = self.call("GET", "/api/v1/clock")["now"]
        return now

    def approvals(self, event_id: str) -> list[dict[str, Any]]:
        """History entries of approvals of ``event_id``."""
        history = self.call("GET", f"/api/v1/history?event_id={event_id}&limit=1000")
        return [h for h in history if "approv" in h["kind"]]


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    """The demo fleet on a virtual clock, every scope's Scheduled Events on."""
    args = ["--clock", "virtual", "--rate-limit", "0", "--enablement", "always"]
    server = ServerProcess(tmp_path / "forewarn.db", args)
    try:
        yield Fleet(server.start(timeout=90))  # generous: a busy machine starts slowly
    finally:
        server.stop()
