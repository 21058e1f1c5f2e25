"""The kubernetes preset with a fake kubectl on PATH, Preempt at once, and --dry-run."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from tests.agent.agentproc import AgentProcess, Recorder, handler_argv
from tests.agent.conftest import Fleet
from tests.agent.kubefake import FakeCluster
from tests.support.waiting import wait_until


def test_kubernetes_preset_drains_before_and_uncordons_after(
    fleet: Fleet, start_agent: Callable[..., AgentProcess], tmp_path: Path
) -> None:
    cluster = FakeCluster(tmp_path)
    agent = start_agent("web-0", f"""
        local_address = "{fleet.address["web-0"]}"
        poll_interval = 0.2
        safety_margin = 60

        [handlers.node]
        type = "kubernetes"
        grace_period = 15
        pdb_timeout = 120
        events = false

        [[rules]]
        event_types = ["Reboot"]
        this_vm = true
        handlers = ["node"]
        approval = "after-handlers"
    """, fleet.url, cluster.env())  # fmt: skip
    [event_id] = fleet.trigger("user-reboot", "web-0")["event_ids"]
    wait_until(lambda: fleet.status(event_id) == "Started", what="the approval")
    assert cluster.calls() == [
        "get node web-0 -o json",
        "taint nodes web-0 forewarn.io/scheduled-event=true:NoSchedule --overwrite",
        f"annotate node web-0 forewarn.io/tainted={event_id} forewarn.io/cordoned={event_id} "
        "--overwrite",
        "cordon web-0",
        "drain web-0 --grace-period=15 --timeout=120s --ignore-daemonsets --delete-emptydir-data",
    ]
    fleet.advance(601)
    agent.wait_log("recovery done", event_id=event_id, result="ok")
    assert cluster.calls()[5:] == [
        "get node web-0 -o json",
        "uncordon web-0",
        "annotate node web-0 forewarn.io/tainted- forewarn.io/cordoned-",
        "taint nodes web-0 forewarn.io/scheduled-event:NoSchedule-",
    ]


def _at(line: dict[str, str]) -> float:
    return datetime.fromisoformat(line["timestamp"].replace("Z", "+00:00")).timestamp()


def test_preempt_handlers_start_within_one_poll_interval_and_in_parallel(
    fleet: Fleet, recorder: Recorder, start_agent: Callable[..., AgentProcess]
) -> None:
    interval = 1.0
    log = recorder.path
    agent = start_agent("workers_0", f"""
        local_address = "{fleet.address["workers_0"]}"
        poll_interval = {interval}
        safety_margin = 5

        [handlers.checkpoint]
        type = "exec"
        argv = {handler_argv(log, "checkpoint", "--sleep", "1")}

        [handlers.deregister]
        type = "exec"
        argv = {handler_argv(log, "deregister", "--sleep", "1")}

        [[rules]]
        event_types = ["Preempt"]
        handlers = ["checkpoint", "deregister"]
        parallel = true
        approval = "after-handlers"
    """, fleet.url)  # fmt: skip
    before = time.time()
    [event_id] = fleet.trigger("spot-eviction", "workers_0")["event_ids"]
    starts = {
        name: agent.wait_log("handler started", handler=name, event_id=event_id)
        for name in ("checkpoint", "deregister")
    }
    for line in starts.values():
        assert _at(line) - before <= interval + 1.0, line  # one poll, plus a slack for load
    ends = recorder.wait(what="end", count=2)
    first_end = min(e["t"] for e in ends)
    assert all(s["t"] < first_end for s in recorder.entries(what="start"))  # side by side
    assert agent.wait_log("handler started", handler="deregister")["timeout"] <= 30 - 5
    wait_until(lambda: fleet.status(event_id) in ("Started", None), what="the eviction")


def test_dry_run_logs_what_it_would_do_and_touches_nothing(
    fleet: Fleet, recorder: Recorder, start_agent: Callable[..., AgentProcess]
) -> None:
    agent = start_agent("web-0", f"""
        local_address = "{fleet.address["web-0"]}"
        poll_interval = 0.2
        dry_run = true

        [handlers.prep]
        type = "exec"
        argv = {handler_argv(recorder.path, "prep")}

        [[rules]]
        event_types = ["Reboot"]
        handlers = ["prep"]
        recovery = ["prep"]
        approval = "after-handlers"
    """, fleet.url)  # fmt: skip
    [event_id] = fleet.trigger("user-reboot", "web-0")["event_ids"]
    agent.wait_log("dry run: would run handler", handler="prep", event_id=event_id)
    agent.wait_log("dry run: would approve the event", event_id=event_id)
    assert fleet.status(event_id) == "Scheduled"
    assert fleet.event(event_id)["approved_by"] is None  # type: ignore[index]
    assert recorder.entries() == []
    assert not (agent.workdir / "state.db").exists()  # a dry run remembers nothing
