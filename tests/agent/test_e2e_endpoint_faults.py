"""The agent as a real process against ``forewarn serve`` with injected endpoint faults:
it keeps retrying through a 410 of 70 s (platform time, on a virtual clock), backs off
instead of polling at its own rate, and the reboot announced during the fault is still
handled and approved once it clears; 500s and reset connections do not stop it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tests.agent.agentproc import AgentProcess, Recorder, handler_argv
from tests.agent.conftest import Fleet
from tests.support.waiting import wait_until


def config(fleet: Fleet, recorder: Recorder) -> str:
    return f"""
        local_address = "{fleet.address["web-0"]}"
        poll_interval = 0.2
        safety_margin = 1

        [handlers.drain]
        type = "exec"
        argv = {handler_argv(recorder.path, "drain")}

        [[rules]]
        event_types = ["Reboot"]
        this_vm = true
        handlers = ["drain"]
        approval = "after-handlers"
    """


def inject(fleet: Fleet, **body: Any) -> dict[str, Any]:
    out: dict[str, Any] = fleet.call("POST", "/api/v1/faults", expect=201, json=body)
    return out


def hits(fleet: Fleet, fault_id: str) -> int:
    for fault in fleet.call("GET", "/api/v1/faults"):
        if fault["id"] == fault_id:
            return int(fault["hits"])
    return -1


def test_the_agent_rides_out_a_410_and_handles_the_event_announced_meanwhile(
    fleet: Fleet, recorder: Recorder, start_agent: Callable[..., AgentProcess]
) -> None:
    agent = start_agent("web-0", config(fleet, recorder), fleet.url)
    gone = inject(fleet, kind="status", status=410, vm="web-0", duration_seconds=70)
    [event_id] = fleet.trigger("user-reboot", "web-0")["event_ids"]
    began = time.monotonic()
    wait_until(lambda: hits(fleet, gone["id"]) >= 3, what="the agent retrying the 410s")
    time.sleep(2.0)
    count, elapsed = hits(fleet, gone["id"]), time.monotonic() - began
    # retried about once a second as advised, not at its own 0.2 s poll interval
    assert count <= elapsed / 0.5 + 2, (count, elapsed)
    assert recorder.entries() == [] and fleet.status(event_id) == "Scheduled"
    assert agent.alive()

    fleet.advance(70)  # the 70 s of platform time are over
    wait_until(lambda: fleet.status(event_id) == "Started", what="the approval after the 410s")
    assert fleet.event(event_id)["approved_by"] == "web-0"  # type: ignore[index]
    [drained] = recorder.wait(handler="drain", what="end")
    assert drained["event_id"] == event_id
    assert fleet.call("GET", "/api/v1/faults") == []

    report = fleet.call("GET", "/api/v1/reactions")
    [coped] = report["faults"]
    assert coped["vm"] == "web-0" and coped["faulted"]["status"] >= 3
    assert coped["kept_polling"] is True and coped["missed"] == []


def test_500s_and_resets_do_not_stop_the_agent(
    fleet: Fleet, recorder: Recorder, start_agent: Callable[..., AgentProcess]
) -> None:
    agent = start_agent("web-0", config(fleet, recorder), fleet.url)
    errors = inject(fleet, kind="status", status=500, vm="web-0")
    wait_until(lambda: hits(fleet, errors["id"]) >= 3, what="the agent meeting 500s")
    fleet.call("DELETE", f"/api/v1/faults/{errors['id']}", json={})
    resets = inject(fleet, kind="reset", vm="web-0")
    [event_id] = fleet.trigger("user-reboot", "web-0")["event_ids"]  # during the resets
    wait_until(lambda: hits(fleet, resets["id"]) >= 3, what="the agent meeting resets")
    assert agent.alive() and fleet.status(event_id) == "Scheduled"
    fleet.call("DELETE", "/api/v1/faults", json={})
    wait_until(lambda: fleet.status(event_id) == "Started", what="the approval after resets")
    assert agent.alive() and agent.get("/readyz").status_code == 200
    recorder.wait(handler="drain", what="end")
