"""The agent survives a misbehaving endpoint, keeps serving metrics and carries on after.

Each fault is injected by a small HTTP server on loopback (``faultserver.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from email.utils import formatdate
from pathlib import Path

import pytest

from forewarn.replay.recorded import read_recording
from tests.agent.agentproc import AgentProcess, Recorder, handler_argv
from tests.agent.faultserver import FaultServer
from tests.support.marks import SLOW, slow
from tests.support.waiting import wait_until

LATEST = "2020-07-01"


@pytest.fixture
def endpoint() -> Iterator[FaultServer]:
    server = FaultServer()
    yield server
    server.close()


def reboot(event_id: str, event_type: str = "Reboot") -> dict[str, object]:
    return {
        "EventId": event_id,
        "EventStatus": "Scheduled",
        "EventType": event_type,
        "ResourceType": "VirtualMachine",
        "Resources": ["web-0"],
        "NotBefore": formatdate(time.time() + 900, usegmt=True),
        "Description": "",
        "EventSource": "Platform",
        "DurationInSeconds": -1,
        "FutureField": {"kept": True},
    }


def start(start_agent: Callable[..., AgentProcess], endpoint: FaultServer, recorder: Recorder):
    return start_agent("web-0", f"""
        vm_name = "web-0"
        poll_interval = 0.2
        safety_margin = 1

        [handlers.prep]
        type = "exec"
        argv = {handler_argv(recorder.path, "prep")}

        [[rules]]
        event_types = ["Reboot"]
        handlers = ["prep"]
        approval = "after-handlers"
    """, endpoint.url)  # fmt: skip


def fault(agent: AgentProcess, endpoint: FaultServer, mode: str, seconds: float) -> None:
    """Inject ``mode`` for ``seconds``: the agent stays up and answers /metrics throughout."""
    endpoint.set_mode(mode)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert agent.alive(), agent.raw[-10:]
        assert agent.get("/healthz").status_code == 200
        assert agent.get("/metrics").status_code == 200
        time.sleep(0.25)
    endpoint.set_mode("ok")


def handled(agent: AgentProcess, endpoint: FaultServer, event_id: str) -> None:
    """A new event after the fault is handled and approved: the agent carried on."""
    endpoint.set_events([reboot(event_id)])
    wait_until(lambda: event_id in endpoint.approvals, what=f"approval of {event_id}")


@pytest.mark.parametrize(
    ("mode", "seconds", "result"),
    [
        ("410", 2.0, "410"),
        pytest.param("500", 2.0, "500", marks=SLOW),
        pytest.param("429", 2.0, "429", marks=SLOW),
        pytest.param("garbage", 2.0, "200", marks=SLOW),
    ],
)
def test_the_agent_rides_out_error_answers(
    mode: str,
    seconds: float,
    result: str,
    endpoint: FaultServer,
    recorder: Recorder,
    start_agent: Callable[..., AgentProcess],
) -> None:
    agent = start(start_agent, endpoint, recorder)
    handled(agent, endpoint, "BEFORE")
    fault(agent, endpoint, mode, seconds)
    assert mode in endpoint.answers  # the agent did meet the fault
    assert agent.metric("forewarn_agent_polls_total", result=result) >= 1
    handled(agent, endpoint, "AFTER")
    assert [e["event_id"] for e in recorder.entries(what="end")] == ["BEFORE", "AFTER"]


@slow
def test_connection_refused_makes_it_unready_then_it_recovers(
    endpoint: FaultServer, recorder: Recorder, start_agent: Callable[..., AgentProcess]
) -> None:
    agent = start(start_agent, endpoint, recorder)
    handled(agent, endpoint, "BEFORE")
    assert agent.get("/readyz").status_code == 200
    fault(agent, endpoint, "refuse", 6.5)
    assert agent.metric("forewarn_agent_polls_total", result="error") >= 1
    wait_until(lambda: agent.get("/readyz").status_code == 200, what="readiness again")
    handled(agent, endpoint, "AFTER")


@slow
def test_refused_long_enough_the_agent_reports_it_unready(
    endpoint: FaultServer, recorder: Recorder, start_agent: Callable[..., AgentProcess]
) -> None:
    agent = start(start_agent, endpoint, recorder)
    handled(agent, endpoint, "BEFORE")
    endpoint.set_mode("refuse")
    ready = wait_until(lambda: agent.get("/readyz").status_code == 503, timeout=30,
                       what="readiness to fail")  # fmt: skip
    assert ready
    assert "no answer from the endpoint" in agent.get("/readyz").text
    assert agent.metric("forewarn_agent_ready") == 0
    endpoint.set_mode("ok")
    handled(agent, endpoint, "AFTER")
    assert agent.metric("forewarn_agent_ready") == 1


def test_an_unknown_event_type_is_seen_ignored_and_the_rest_handled(
    endpoint: FaultServer, recorder: Recorder, start_agent: Callable[..., AgentProcess]
) -> None:
    agent = start(start_agent, endpoint, recorder)
    endpoint.set_events([reboot("FUTURE", "Hibernate"), reboot("KNOWN")])
    wait_until(lambda: "KNOWN" in endpoint.approvals, what="approval of the known event")
    ignored = agent.wait_log("event ignored", event_id="FUTURE")
    assert ignored["type"] == "Hibernate"
    assert agent.metric("forewarn_agent_events_seen_total", type="Hibernate", rule="no-rule") == 1
    assert "FUTURE" not in endpoint.approvals
    [run] = recorder.entries(what="end")
    assert run["event_id"] == "KNOWN"


@slow
def test_410_for_longer_than_the_clients_retry_window(
    endpoint: FaultServer, recorder: Recorder, start_agent: Callable[..., AgentProcess]
) -> None:
    """The client retries 410 for 70 s, then raises: the agent logs it and polls on."""
    agent = start(start_agent, endpoint, recorder)
    handled(agent, endpoint, "BEFORE")
    fault(agent, endpoint, "410", 75)
    agent.wait_log("endpoint error", status=410)
    assert agent.metric("forewarn_agent_errors_total", kind="endpoint") >= 1
    handled(agent, endpoint, "AFTER")


def test_readyz_is_503_while_the_endpoint_answers_html_and_200_once_a_document_comes(
    endpoint: FaultServer, recorder: Recorder, start_agent: Callable[..., AgentProcess]
) -> None:
    agent = start(start_agent, endpoint, recorder)
    handled(agent, endpoint, "BEFORE")
    assert agent.get("/readyz").status_code == 200
    endpoint.set_mode("garbage")  # 200 with an HTML page: the transport calls it a success
    wait_until(lambda: agent.get("/readyz").status_code == 503, what="readiness to fail")
    answer = agent.get("/readyz")
    assert "no scheduled-events document" in answer.text, answer.text
    assert agent.metric("forewarn_agent_ready") == 0
    assert agent.get("/healthz").status_code == 200  # alive, only not ready
    time.sleep(1.0)  # polls keep meeting the garbage: still not ready
    assert agent.get("/readyz").status_code == 503
    endpoint.set_mode("ok")
    wait_until(lambda: agent.get("/readyz").status_code == 200, what="readiness again")
    handled(agent, endpoint, "AFTER")


def test_record_writes_each_new_document_as_replay_reads_it(
    endpoint: FaultServer, recorder: Recorder, start_agent: Callable[..., AgentProcess],
    tmp_path: Path,
) -> None:  # fmt: skip
    record = tmp_path / "captured.jsonl"
    agent = start_agent("web-0", f"""
        vm_name = "web-0"
        poll_interval = 0.1
        record = "{record}"
    """, endpoint.url)  # fmt: skip
    wait_until(lambda: record.exists() and record.read_text() != "", what="the first line")
    endpoint.set_events([reboot("REC")])
    wait_until(lambda: len(record.read_text().splitlines()) >= 2, what="the second line")
    time.sleep(0.5)  # more polls of the same document (304s and 200s): no more lines
    assert agent.alive()
    frames = read_recording(record).frames["web-0"]
    assert [(f.incarnation, f.api_version) for f in frames] == [(1, LATEST), (2, LATEST)]
    assert [e.event_id for e in frames[1].document.events] == ["REC"]
