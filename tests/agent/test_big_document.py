"""A document of 10,000 events for this VM: the agent stays live and approves every one.

It once hung here (polled once in 240 s, never answered /healthz, approved nothing and
ignored SIGTERM for minutes): 10,000 concurrent approval POSTs cost httpx's pool time
quadratic in their number, every event's writes committed one fsync each, all on the loop
that answers health and signals. The endpoint is a fake on loopback (``faultserver.py``),
the agent a real process.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from email.utils import formatdate

import httpx
import pytest

from tests.agent.agentproc import AgentProcess
from tests.agent.faultserver import FaultServer
from tests.support.waiting import wait_until

EVENTS = 10_000
#: A live agent answers a probe well within this (a hung one took minutes).
PROBE_TIMEOUT = 3.0


@pytest.fixture
def endpoint() -> Iterator[FaultServer]:
    server = FaultServer()
    yield server
    server.close()


def event_ids(count: int) -> list[str]:
    return [f"{n:08x}-0000-4000-8000-000000000000" for n in range(count)]


def document(ids: list[str]) -> list[dict[str, object]]:
    not_before = formatdate(time.time() + 600, usegmt=True)
    return [
        {
            "EventId": event_id,
            "EventStatus": "Scheduled",
            "EventType": "Reboot",
            "ResourceType": "VirtualMachine",
            "Resources": ["web-0"],
            "NotBefore": not_before,
            "Description": "",
            "EventSource": "Platform",
            "DurationInSeconds": -1,
        }
        for event_id in ids
    ]


CONFIG = """
    vm_name = "web-0"
    poll_interval = 0.2

    [[rules]]
    event_types = ["Reboot"]
    approval = "after-handlers"
"""


def probe(agent: AgentProcess, path: str) -> int:
    url = f"http://127.0.0.1:{agent.metrics_port}{path}"
    try:
        return httpx.get(url, timeout=PROBE_TIMEOUT, trust_env=False).status_code
    except httpx.TimeoutException:
        pytest.fail(f"{path} did not answer in {PROBE_TIMEOUT} s")


def stop_within(agent: AgentProcess, seconds: float) -> int:
    assert agent.proc is not None
    agent.proc.send_signal(signal.SIGTERM)
    try:
        return agent.proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the agent still runs {seconds} s after SIGTERM")


def test_ten_thousand_events_are_all_approved_once_while_health_and_polls_go_on(
    endpoint: FaultServer, start_agent: Callable[..., AgentProcess]
) -> None:
    ids = event_ids(EVENTS)
    agent = start_agent("web-0", CONFIG, endpoint.url)
    wait_until(lambda: probe(agent, "/readyz") == 200, what="the agent ready")
    endpoint.set_events(document(ids))
    polls_before = len(endpoint.answers)
    deadline = time.monotonic() + 180
    while len(endpoint.approvals) < EVENTS:
        assert probe(agent, "/healthz") == 200
        assert probe(agent, "/readyz") == 200  # it polls on: the endpoint answered lately
        assert agent.alive(), agent.raw[-5:]
        assert time.monotonic() < deadline, f"{len(endpoint.approvals)} approved in 180 s"
        time.sleep(0.1)
    polled = len(endpoint.answers)
    assert polled > polls_before + 1  # the document's poll, and more while at work
    wait_until(lambda: len(endpoint.answers) >= polled + 3, what="polls after the approvals")

    assert Counter(endpoint.approvals) == Counter(ids)  # every event, exactly once
    assert len(endpoint.posts) <= EVENTS // 50  # StartRequests batched, not one POST each
    assert agent.metric("forewarn_agent_approvals_total", result="approved") == EVENTS
    assert stop_within(agent, 10) == 0


def test_sigterm_in_the_middle_of_the_document_stops_at_once_and_a_restart_approves_the_rest(
    endpoint: FaultServer, start_agent: Callable[..., AgentProcess]
) -> None:
    ids = event_ids(EVENTS)
    agent = start_agent("web-0", CONFIG, endpoint.url)
    endpoint.set_events(document(ids))
    wait_until(lambda: endpoint.posts, what="the first approvals", interval=0.01)
    assert stop_within(agent, 10) == 0
    stopped_with = len(endpoint.approvals)

    agent.start()  # the same state file: what was approved is not approved again
    wait_until(lambda: len(endpoint.approvals) >= EVENTS, timeout=180, what="every approval")
    time.sleep(1.0)  # a few more polls: nothing sent twice
    assert Counter(endpoint.approvals) == Counter(ids), f"{stopped_with} before SIGTERM"
    assert stop_within(agent, 10) == 0


def test_an_id_the_endpoint_refuses_costs_only_its_own_approval(
    endpoint: FaultServer, start_agent: Callable[..., AgentProcess]
) -> None:
    """The endpoint approves all of a POST's ids or none: a refused batch is split until
    the refused id is alone, and every other event is approved."""
    ids = event_ids(300)
    endpoint.refused = {ids[123]}
    agent = start_agent("web-0", CONFIG, endpoint.url)
    endpoint.set_events(document(ids))
    refused = agent.wait_log("the endpoint refused the approval", event_id=ids[123])
    assert ids[123] in refused["error"]
    wait_until(lambda: len(endpoint.approvals) >= len(ids) - 1, what="the other approvals")
    assert Counter(endpoint.approvals) == Counter(ids[:123] + ids[124:])
    assert len(endpoint.posts) <= 50  # batches and a few halvings, not a POST per id
    assert stop_within(agent, 10) == 0
