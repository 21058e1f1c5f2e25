"""An idle agent holds only what polling needs (issue 31: its memory on every VM).

``forewarn agent run`` runs for real (one rule, an exec handler, the default JSON logs)
against an endpoint on loopback, through ``modules_at_exit.py``, which writes the names
in ``sys.modules`` when the agent has stopped. An agent that saw no event never loaded
an event's machinery, the logging library or the unused handlers and backends; one that
handled an event loaded the machinery then, ran the handler and approved once.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from email.utils import formatdate
from pathlib import Path

import pytest

from tests.agent.agentproc import HERE, AgentProcess, Recorder, handler_argv, running
from tests.agent.faultserver import FaultServer
from tests.support.waiting import wait_until

#: What this configuration's agent never holds, whatever it handled.
NEVER = (
    "forewarn.agent.coordination.redis_backend",  # no rule coordinates
    "forewarn.agent.coordination.postgres_backend",
    "forewarn.agent.handlers.pycall",  # no python, webhook or kubernetes handler
    "forewarn.agent.handlers.webhook",
    "forewarn.agent.handlers.kubernetes",
    "forewarn.agent.template",
    "forewarn.agent.kubernetes_table",  # no [kubernetes] table
    "structlog",  # JSON lines are written by forewarn.agent.logs
    "msgspec",  # the configuration's records are dataclasses (forewarn.agent.records)
    "tenacity",  # the client's retry loop is its own
    "typing_extensions",
    "pathlib",
    "urllib.parse",  # only to hide a password in --print-config
    "forewarn.client.recording",  # no `record` file
    "prometheus_client",  # nobody scraped /metrics
    "httpx",
    "rich",
)
#: What it holds only once a rule took an event: an event's machinery.
NOT_WHILE_IDLE = (
    "forewarn.agent.flow",
    "forewarn.agent.handler_runs",
    "forewarn.agent.approval",
    "forewarn.agent.orphans",
    "forewarn.agent.coordination",
    "forewarn.agent.handlers.context",
    *NEVER,
)


@pytest.fixture
def endpoint() -> Iterator[FaultServer]:
    server = FaultServer()
    yield server
    server.close()


@pytest.fixture
def agent(tmp_path: Path, endpoint: FaultServer, recorder: Recorder) -> Iterator[AgentProcess]:
    """The agent through ``modules_at_exit.py``, started (killed after the test)."""
    process = AgentProcess(tmp_path / "web-0", f"""
        vm_name = "web-0"
        poll_interval = 0.1

        [handlers.prep]
        type = "exec"
        argv = {handler_argv(recorder.path, "prep")}

        [[rules]]
        event_types = ["Reboot"]
        handlers = ["prep"]
        approval = "after-handlers"
    """, endpoint.url)  # fmt: skip
    process.command = [sys.executable, str(HERE / "modules_at_exit.py"), str(modules_file(process))]
    with running([process]):
        yield process.start()


def modules_file(agent: AgentProcess) -> Path:
    return agent.workdir / "modules.json"


def reboot(event_id: str) -> dict[str, object]:
    return {"EventId": event_id, "EventStatus": "Scheduled", "EventType": "Reboot",
            "ResourceType": "VirtualMachine", "Resources": ["web-0"],
            "NotBefore": formatdate(time.time() + 900, usegmt=True), "Description": "",
            "EventSource": "Platform", "DurationInSeconds": -1}  # fmt: skip


def stopped_modules(agent: AgentProcess) -> list[str]:
    """Stop the agent (SIGTERM) and read what it had loaded."""
    assert agent.stop() == 0
    assert agent.logs("agent stopped"), agent.raw[-20:]
    assert all(line.startswith("{") for line in agent.raw if line), agent.raw[-20:]
    loaded: list[str] = json.loads(modules_file(agent).read_text())
    assert "forewarn.agent.daemon" in loaded  # the list is the agent's
    return loaded


def test_an_idle_agent_holds_only_what_polling_needs(
    agent: AgentProcess, endpoint: FaultServer
) -> None:
    polled = len(endpoint.answers)
    wait_until(lambda: len(endpoint.answers) >= polled + 5, what="five more polls")
    assert agent.get("/healthz").status_code == 200
    loaded = stopped_modules(agent)
    assert [name for name in NOT_WHILE_IDLE if name in loaded] == []


def test_the_first_event_loads_its_machinery_and_is_approved_once(
    agent: AgentProcess, endpoint: FaultServer, recorder: Recorder
) -> None:
    endpoint.set_events([reboot("E1")])
    wait_until(lambda: "E1" in endpoint.approvals, what="the approval of E1")
    loaded = stopped_modules(agent)
    assert endpoint.approvals == ["E1"]
    assert [r["event_id"] for r in recorder.entries(handler="prep", what="end")] == ["E1"]
    assert {"forewarn.agent.flow", "forewarn.agent.handler_runs"} <= set(loaded)
    assert [name for name in NEVER if name in loaded] == []
