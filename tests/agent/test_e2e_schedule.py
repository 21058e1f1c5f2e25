"""Timing: handlers scheduled before NotBefore, webhooks on receipt, events missed."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from email.utils import formatdate
from pathlib import Path

import pytest

from tests.agent.agentproc import AgentProcess, Recorder, handler_argv
from tests.agent.faultserver import FaultServer
from tests.agent.helpers import recording_webhook
from tests.support.waiting import wait_until


@pytest.fixture
def endpoint() -> Iterator[FaultServer]:
    server = FaultServer()
    yield server
    server.close()


def scheduled(event_id: str, event_type: str, in_seconds: float) -> dict[str, object]:
    return {
        "EventId": event_id, "EventStatus": "Scheduled", "EventType": event_type,
        "ResourceType": "VirtualMachine", "Resources": ["web-0"],
        "NotBefore": formatdate(time.time() + in_seconds, usegmt=True),
        "Description": "Host server is undergoing maintenance.", "EventSource": "Platform",
        "DurationInSeconds": -1,
    }  # fmt: skip


def test_handlers_wait_for_their_schedule_but_webhooks_fire_on_receipt(
    endpoint: FaultServer, recorder: Recorder, start_agent: Callable[..., AgentProcess]
) -> None:
    with recording_webhook() as hook:
        agent = start_agent("web-0", f"""
            vm_name = "web-0"
            poll_interval = 0.2
            safety_margin = 1

            [handlers.notify]
            type = "webhook"
            url = "{hook.url}"
            on_receipt = true
            body = {{ text = "${{EventType}} on ${{vm_name}}", id = "${{EventId}}" }}

            [handlers.prep]
            type = "exec"
            argv = {handler_argv(recorder.path, "prep")}

            [[rules]]
            event_types = ["Redeploy"]
            handlers = ["notify", "prep"]
            act_minutes_before = 1.6
            approval = "after-handlers"
        """, endpoint.url)  # fmt: skip
        # Degraded hardware, compressed: NotBefore in 100 s, act 96 s before it.
        endpoint.set_events([scheduled("HW", "Redeploy", 100)])
        wait_until(lambda: hook.requests, what="the webhook")
        received = time.time()
        assert hook.requests[0][2] == {"text": "Redeploy on web-0", "id": "HW"}
        plan = agent.wait_log("handlers scheduled", event_id="HW")
        assert 1.0 < plan["start_in_seconds"] <= 4.0
        assert recorder.entries() == []  # not yet
        [start] = recorder.wait(handler="prep", what="start")
        assert start["t"] - received >= 1.0
        wait_until(lambda: "HW" in endpoint.approvals, what="the approval")
        assert len(hook.requests) == 1


def test_an_event_that_starts_while_its_handler_runs_is_reported_missed(
    endpoint: FaultServer,
    recorder: Recorder,
    start_agent: Callable[..., AgentProcess],
    tmp_path: Path,
) -> None:
    gate = tmp_path / "gate"
    agent = start_agent("web-0", f"""
        vm_name = "web-0"
        poll_interval = 0.2
        safety_margin = 1

        [handlers.prep]
        type = "exec"
        argv = {handler_argv(recorder.path, "prep", "--gate", str(gate))}

        [handlers.back]
        type = "exec"
        argv = {handler_argv(recorder.path, "back")}

        [[rules]]
        event_types = ["Reboot"]
        handlers = ["prep"]
        recovery = ["back"]
        approval = "after-handlers"
    """, endpoint.url)  # fmt: skip
    event = scheduled("EV", "Reboot", 900)
    endpoint.set_events([event])
    recorder.wait(handler="prep", what="start")
    endpoint.set_events([{**event, "EventStatus": "Started", "NotBefore": ""}])
    agent.wait_log("missed: the event started before its handlers were done", event_id="EV")
    assert agent.metric("forewarn_agent_missed_events_total") == 1
    gate.touch()
    agent.wait_log("handlers done", event_id="EV", outcome="ok")
    endpoint.set_events([])
    recorder.wait(handler="back", what="end")
    assert endpoint.approvals == []  # it had started: nothing to approve
