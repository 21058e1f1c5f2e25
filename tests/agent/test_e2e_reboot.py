"""The agent as a real process against ``forewarn serve``: one VM's user reboot."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

from tests.agent.agentproc import AgentProcess, Recorder, handler_argv
from tests.agent.conftest import Fleet
from tests.support.waiting import wait_until

REBOOT_HOLD = 600.0


def config(fleet: Fleet, recorder: Recorder, vm: str, *first_options: str) -> str:
    log = recorder.path
    return f"""
        local_address = "{fleet.address[vm]}"
        poll_interval = 0.2
        safety_margin = 1

        [handlers.first]
        type = "exec"
        argv = {handler_argv(log, "first", "--sleep", "0.3", *first_options)}

        [handlers.second]
        type = "exec"
        argv = {handler_argv(log, "second")}

        [handlers.after]
        type = "exec"
        argv = {handler_argv(log, "after")}

        [[rules]]
        name = "my-reboots"
        event_types = ["Reboot"]
        this_vm = true
        handlers = ["first", "second"]
        recovery = ["after"]
        approval = "after-handlers"
    """


def test_user_reboot_runs_handlers_in_order_approves_and_recovers(
    fleet: Fleet, recorder: Recorder, start_agent: Callable[..., AgentProcess]
) -> None:
    agent = start_agent("web-0", config(fleet, recorder, "web-0"), fleet.url)
    [event_id] = fleet.trigger("user-reboot", "web-0")["event_ids"]

    wait_until(lambda: fleet.status(event_id) == "Started", what="the approval")
    assert fleet.event(event_id)["approved_by"] == "web-0"  # type: ignore[index]
    runs = recorder.entries(phase="prepare")
    assert [(r["handler"], r["what"]) for r in runs] == [
        ("first", "start"), ("first", "end"), ("second", "start"), ("second", "end"),
    ]  # fmt: skip
    assert all(r["event_id"] == r["stdin_event_id"] == event_id for r in runs)
    assert all(r["vm"] == "web-0" for r in runs)
    approved = agent.wait_log("approved", event_id=event_id)
    assert approved["seconds_since_detection"] >= 0.3  # after the handlers, never before
    assert recorder.entries(handler="after") == []  # recovery waits for the event to go

    fleet.advance(REBOOT_HOLD + 1)
    wait_until(lambda: fleet.status(event_id) is None, what="the event's removal")
    [recovered] = recorder.wait(handler="after", what="end")
    assert recovered["phase"] == "recover" and recovered["event_id"] == event_id
    agent.wait_log("recovery done", event_id=event_id, result="ok")

    assert agent.metric("forewarn_agent_approvals_total", mode="after-handlers",
                        result="approved") == 1  # fmt: skip
    assert agent.metric("forewarn_agent_events_seen_total", type="Reboot", rule="my-reboots") == 1
    assert agent.metric("forewarn_agent_handler_runs_total", handler="first", phase="prepare",
                        result="ok") == 1  # fmt: skip
    assert agent.metric("forewarn_agent_detection_to_approval_seconds_count") == 1
    assert agent.metric("forewarn_agent_missed_events_total") == 0
    assert agent.get("/readyz").status_code == 200

    status = subprocess.run(
        [sys.executable, "-m", "forewarn", "agent", "status", "-c", str(agent.config_path)],
        capture_output=True, text=True, check=True, env=agent.env,
    )  # fmt: skip
    assert "agent: 200 ready" in status.stdout
    lines = status.stdout.splitlines()
    at = next(n for n, x in enumerate(lines) if event_id in x)
    block = "\n".join(lines[at : at + 4])  # the event's id, rule, then its milestones
    assert "rule my-reboots" in lines[at] and "(ok)" in block and "recovered 20" in block
    assert agent.stop() == 0
    agent.wait_log("agent stopped")


def test_a_failing_handler_means_no_approval_and_the_event_starts_at_not_before(
    fleet: Fleet, recorder: Recorder, start_agent: Callable[..., AgentProcess]
) -> None:
    agent = start_agent("web-0", config(fleet, recorder, "web-0", "--fail"), fleet.url)
    op = fleet.trigger("user-reboot", "web-0")
    [event_id] = op["event_ids"]

    done = agent.wait_log("handlers done", event_id=event_id)
    assert done["outcome"] == "failed" and "handler first failed" in done["failure"]
    assert "refusing on purpose" in done["failure"]
    assert recorder.entries(handler="second") == []  # in order: the rest never ran
    agent.wait_log("not approving", event_id=event_id)
    assert fleet.status(event_id) == "Scheduled"
    assert fleet.event(event_id)["approved_by"] is None  # type: ignore[index]

    fleet.advance(op["not_before"] - fleet.now() + 1)
    wait_until(lambda: fleet.status(event_id) == "Started", what="NotBefore")
    assert fleet.event(event_id)["approved_by"] is None  # type: ignore[index]
    assert agent.metric("forewarn_agent_approvals_total", mode="after-handlers",
                        result="declined") == 1  # fmt: skip
    assert agent.metric("forewarn_agent_handler_runs_total", handler="first", phase="prepare",
                        result="failed") == 1  # fmt: skip
    # Recovery still runs when the event leaves: the first handler did act.
    fleet.advance(REBOOT_HOLD + 1)
    recorder.wait(handler="after", what="end")
