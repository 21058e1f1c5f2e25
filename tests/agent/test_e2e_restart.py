"""Restarts: after a crash or a stop, the agent redoes nothing that finished."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

from tests.agent.agentproc import AgentProcess, Recorder, handler_argv
from tests.agent.conftest import Fleet
from tests.support.marks import slow
from tests.support.waiting import wait_until


def config(fleet: Fleet, recorder: Recorder, gate: Path, shutdown: str = "finish") -> str:
    log = recorder.path
    return f"""
        local_address = "{fleet.address["web-0"]}"
        poll_interval = 0.2
        safety_margin = 1
        shutdown = "{shutdown}"

        [handlers.a]
        type = "exec"
        argv = {handler_argv(log, "a")}

        [handlers.b]
        type = "exec"
        argv = {handler_argv(log, "b", "--gate", str(gate))}

        [handlers.c]
        type = "exec"
        argv = {handler_argv(log, "c")}

        [[rules]]
        event_types = ["Reboot"]
        this_vm = true
        handlers = ["a", "b"]
        recovery = ["c"]
        approval = "after-handlers"
    """


def quiet_for(agent: AgentProcess, seconds: float) -> None:
    """Let the agent poll a few times after a restart."""

    def answered() -> float:
        return sum(agent.metric("forewarn_agent_polls_total", result=r) for r in ("200", "304"))

    polls = answered()
    time.sleep(seconds)
    assert answered() > polls


def test_a_restarted_agent_reruns_nothing_finished_and_never_reapproves(
    fleet: Fleet, recorder: Recorder, start_agent: Callable[..., AgentProcess], tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    agent = start_agent("web-0", config(fleet, recorder, gate), fleet.url)
    [event_id] = fleet.trigger("user-reboot", "web-0")["event_ids"]
    recorder.wait(handler="b", what="start")

    # A crash while b runs: a finished, b did not.
    agent.stop(signal.SIGKILL)
    agent.start()
    agent.wait_log("handler already ran before a restart", handler="a", result="ok")
    agent.wait_log("handler was interrupted before it finished; running it again", handler="b")
    recorder.wait(handler="b", what="start", count=2)
    assert agent.metric("forewarn_agent_handler_runs_total", handler="b", phase="prepare",
                        result="crashed") == 1  # fmt: skip
    gate.touch()
    wait_until(lambda: fleet.status(event_id) == "Started", what="the approval")
    agent.wait_log("approved", event_id=event_id)
    assert len(recorder.entries(handler="a", what="start")) == 1

    # A stop and a start after the approval: no handler, no second approval.
    assert agent.stop() == 0
    agent.start()
    quiet_for(agent, 1.0)
    assert agent.logs("handler started") == [] and agent.logs("approved") == []

    fleet.advance(601)
    recorder.wait(handler="c", what="end")
    agent.wait_log("recovery done", event_id=event_id)
    assert agent.stop() == 0
    agent.start()
    quiet_for(agent, 1.0)
    assert agent.logs("handler started") == []
    assert len(recorder.entries(handler="c", what="start")) == 1
    assert len(recorder.entries(handler="a", what="start")) == 1


@slow
def test_sigterm_finishes_running_handlers_and_the_restart_carries_on(
    fleet: Fleet, recorder: Recorder, start_agent: Callable[..., AgentProcess], tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    agent = start_agent("web-0", config(fleet, recorder, gate, "finish"), fleet.url)
    [event_id] = fleet.trigger("user-reboot", "web-0")["event_ids"]
    recorder.wait(handler="b", what="start")
    assert agent.proc is not None
    agent.proc.send_signal(signal.SIGTERM)
    agent.wait_log("shutdown: letting running handlers finish")
    time.sleep(0.5)
    assert agent.alive()  # it waits for b
    gate.touch()
    assert agent.proc.wait(timeout=30) == 0
    recorder.wait(handler="b", what="end")
    assert fleet.status(event_id) == "Scheduled"  # it started nothing new, approval included

    agent.start()
    agent.wait_log("handler already ran before a restart", handler="b", result="ok")
    wait_until(lambda: fleet.status(event_id) == "Started", what="the approval")
    assert len(recorder.entries(handler="b", what="start")) == 1


@slow
def test_sigterm_abandons_running_handlers_when_told_to(
    fleet: Fleet, recorder: Recorder, start_agent: Callable[..., AgentProcess], tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    agent = start_agent("web-0", config(fleet, recorder, gate, "abandon"), fleet.url)
    fleet.trigger("user-reboot", "web-0")
    [started] = recorder.wait(handler="b", what="start")
    assert agent.stop(timeout=20) == 0
    agent.wait_log("handler abandoned", handler="b")
    # The handler's process went with it.
    wait_until(lambda: not Path(f"/proc/{started['pid']}").exists()
               or "zombie" in Path(f"/proc/{started['pid']}/status").read_text(),
               timeout=10, what="the handler's process to end")  # fmt: skip


def test_a_handler_a_killed_agent_left_running_is_ended_before_the_retry(
    fleet: Fleet, recorder: Recorder, start_agent: Callable[..., AgentProcess], tmp_path: Path
) -> None:
    """SIGKILL the agent (not its handler): the restart ends the orphan, then retries."""
    gate = tmp_path / "gate"
    agent = start_agent("web-0", config(fleet, recorder, gate), fleet.url)
    op = fleet.trigger("user-reboot", "web-0")
    [event_id] = op["event_ids"]
    [first] = recorder.wait(handler="b", what="start")
    agent.stop(signal.SIGKILL)
    time.sleep(0.3)
    assert _running(first["pid"]), "the handler outlives its agent (its own session)"
    agent.start()
    ended = agent.wait_log("ending the handler process a crash left running", handler="b")
    assert ended["pid"] == first["pid"]
    second = recorder.wait(handler="b", what="start", count=2)[1]
    assert not _running(first["pid"])
    gate.touch()
    wait_until(lambda: fleet.status(event_id) == "Started", what="the approval")
    time.sleep(0.5)
    ends = recorder.entries(handler="b", what="end")
    assert [e["pid"] for e in ends] == [second["pid"]]


def _running(pid: int) -> bool:
    """``pid`` exists and is no zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return False
    return fields[0] != "Z"
