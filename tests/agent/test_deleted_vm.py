"""A VM the platform deleted gets 404 from the endpoint: said once, then exit or idle."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from tests.agent.agentproc import AgentProcess
from tests.agent.faultserver import FaultServer
from tests.support.waiting import wait_until

DELETED = "the platform deleted this VM (the endpoint answers 404)"


@pytest.fixture
def endpoint() -> Iterator[FaultServer]:
    server = FaultServer()
    yield server
    server.close()


def start(start_agent: Callable[..., AgentProcess], endpoint: FaultServer, on_deleted: str):
    config = f'vm_name = "web-0"\npoll_interval = 0.1\non_deleted = "{on_deleted}"\n'
    return start_agent("web-0", config, endpoint.url)


def test_a_deleted_vm_is_said_once_and_the_agent_exits(
    start_agent: Callable[..., AgentProcess], endpoint: FaultServer
) -> None:
    agent = start(start_agent, endpoint, "exit")
    agent.wait_log("identity known")
    endpoint.set_mode("404")
    assert agent.proc is not None
    assert agent.proc.wait(timeout=30) == 0
    assert len(agent.logs(DELETED)) == 1
    assert agent.logs("endpoint error") == []


def test_a_deleted_vm_idles_quietly_when_asked(
    start_agent: Callable[..., AgentProcess], endpoint: FaultServer
) -> None:
    agent = start(start_agent, endpoint, "idle")
    endpoint.set_mode("404")
    agent.wait_log(DELETED)
    time.sleep(1.5)  # fifteen poll intervals
    assert agent.alive()
    assert len(agent.logs(DELETED)) == 1
    assert agent.logs("endpoint error") == []
    assert endpoint.answers.count("404") <= 2
    wait_until(lambda: agent.get("/healthz").status_code == 200, what="healthz")
