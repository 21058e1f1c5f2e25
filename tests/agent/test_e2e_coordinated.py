"""Coordinated approval: one agent per VM of an update domain, over Redis and PostgreSQL.

In the demo fleet web-1 and web-4 share a host and an update domain, so a platform reboot
of that host gives the ``web`` availability set one event listing both. Each VM's agent
runs its handler and votes; the event may start early only once both said ready, and
never after a "not ready".
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.agent.agentproc import AgentProcess, Recorder, handler_argv
from tests.agent.conftest import Fleet
from tests.agent.coordinated import BACKENDS, coordinated_config
from tests.support.marks import SLOW, slow
from tests.support.waiting import wait_until

GROUP = ("web-1", "web-4")


def start_group(
    fleet: Fleet,
    recorder: Recorder,
    start_agent: Callable[..., AgentProcess],
    backend: str,
    last_options: tuple[str, ...],
) -> tuple[dict[str, AgentProcess], str]:
    namespace = f"e2e-{uuid.uuid4().hex}"
    agents = {
        vm: start_agent(
            vm,
            coordinated_config(
                fleet,
                vm,
                backend,
                namespace,
                handler_argv(recorder.path, vm, *(last_options if vm == "web-4" else ())),
            ),
            fleet.url,
        )
        for vm in GROUP
    }
    assert fleet.host["web-1"] == fleet.host["web-4"]
    op = fleet.trigger("platform-reboot", fleet.host["web-1"])
    events = [fleet.event(event_id) for event_id in op["event_ids"]]
    [event] = [e for e in events if e is not None and tuple(e["resources"]) == GROUP]
    return agents, event["id"]


@pytest.mark.parametrize("backend", ["redis", pytest.param("postgres", marks=SLOW)])
def test_the_event_is_approved_exactly_when_the_last_vm_is_ready(
    backend: str,
    fleet: Fleet,
    recorder: Recorder,
    start_agent: Callable[..., AgentProcess],
    tmp_path: Path,
) -> None:
    gate = tmp_path / "web-4-may-finish"
    agents, event_id = start_group(fleet, recorder, start_agent, backend, ("--gate", str(gate)))
    agents["web-1"].wait_log("vote recorded", event_id=event_id, ready=True)
    recorder.wait(handler="web-4", what="start")
    # web-1 is ready, web-4 is still preparing: several polls go by, and nobody approves.
    time.sleep(1.5)
    assert fleet.status(event_id) == "Scheduled"
    assert fleet.event(event_id)["approved_by"] is None  # type: ignore[index]
    assert not any(agent.logs("approved") for agent in agents.values())

    opened = time.time()
    gate.touch()
    # (The host's other scopes have events of their own: the operation starts once all are
    # approved, so the web event's own approval is what the group decides.)
    approver = wait_until(
        lambda: fleet.event(event_id)["approved_by"],  # type: ignore[index]
        what="the group's approval",
    )
    assert approver in GROUP
    # (the approving agent logs its approval once the endpoint has answered it: after the
    # fleet shows it, so its line is waited for)
    approvals = wait_until(
        lambda: [line for agent in agents.values() for line in agent.logs("approved")],
        what="an agent of the group logging its approval",
    )
    last_vote = agents["web-4"].wait_log("vote recorded", event_id=event_id, ready=True)
    first = min(approvals, key=lambda line: line["timestamp"])
    assert first["timestamp"] >= last_vote["timestamp"]
    assert time.time() >= opened
    assert agents["web-4"].logs("group complete", event_id=event_id)


@slow
@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_a_vm_that_is_not_ready_blocks_the_group(
    backend: str, fleet: Fleet, recorder: Recorder, start_agent: Callable[..., AgentProcess]
) -> None:
    agents, event_id = start_group(fleet, recorder, start_agent, backend, ("--fail",))
    agents["web-4"].wait_log("vote recorded", event_id=event_id, ready=False)
    agents["web-1"].wait_log("vote recorded", event_id=event_id, ready=True)
    blocked = agents["web-1"].wait_log("group will not be ready", event_id=event_id)
    assert "web-4 is not ready" in blocked["detail"]
    time.sleep(1.0)
    assert fleet.status(event_id) == "Scheduled"
    assert fleet.event(event_id)["approved_by"] is None  # type: ignore[index]
    assert not any(agent.logs("approved") for agent in agents.values())
    assert agents["web-1"].metric("forewarn_agent_approvals_total", mode="coordinated",
                                  result="blocked") == 1  # fmt: skip
