"""Runs: waiting for VMs' approvals without moving a virtual clock, failed checks, and the
CLI's exit codes and output against a real server, on virtual and scaled real clocks."""

from __future__ import annotations

import json
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from forewarn.controlapi import ControlClient
from forewarn.scenarios import Runner, parse_scenario
from forewarn.testing.server import Forewarn
from tests.support.cli import run_cli
from tests.support.serverproc import VIRTUAL, ServerProcess


def _scenario(text: str) -> Any:
    import yaml

    return parse_scenario(yaml.safe_load(text), "test")


def test_waiting_for_approval_lets_a_vm_approve_while_the_clock_stands_still() -> None:
    scenario = _scenario(
        "steps:\n"
        "  - {do: user-reboot, on: web-0, as: reboot}\n"
        "  - {wait: approved, for: reboot, within: 30s}\n"
        "expect:\n"
        "  - {operation: reboot, started: approved, state: completed}\n"
    )
    with Forewarn() as forewarn:
        start = forewarn.now()

        def web_3_approves() -> None:  # another VM of the availability set, by its endpoint
            client = forewarn.client("web-3")
            deadline = time.monotonic() + 20
            while not (events := client.get().events) and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.3)
            client.approve(events[0].event_id)

        approver = threading.Thread(target=web_3_approves)
        approver.start()
        run = Runner(ControlClient(forewarn.control_url)).run(scenario)
        approver.join()
        assert run.ok, [(c.what, c.detail) for c in run.checks]
        [op] = run.operations["reboot"]
        assert op["started_at"] == start  # approved before any virtual time passed
        assert run.checks[0].what == "step 2: reboot approved within 30s"
        assert run.checks[0].detail == "after 0s"


def test_nobody_approving_fails_the_wait_and_the_clock_did_not_move() -> None:
    scenario = _scenario(
        "steps:\n"
        "  - {do: user-reboot, on: web-0, as: reboot}\n"
        "  - {wait: approved, for: reboot, within: 1s}\n"
        "settle: false\n"
    )
    with Forewarn() as forewarn:
        start = forewarn.now()
        run = Runner(ControlClient(forewarn.control_url)).run(scenario)
        assert not run.ok
        [wait] = run.checks
        assert (wait.ok, wait.detail) == (False, "not after 0s")
        assert forewarn.now() == start
        assert forewarn.events()[0]["status"] == "Scheduled"


def test_an_approval_that_can_no_longer_come_fails_at_once() -> None:
    scenario = _scenario(
        "steps:\n"
        "  - {do: user-reboot, on: web-0, as: reboot}\n"
        "  - {wait: started, for: reboot}\n"
        "  - {wait: approved, for: reboot, within: 1h}\n"
    )
    with Forewarn() as forewarn:
        run = Runner(ControlClient(forewarn.control_url)).run(scenario)
    checks = {c.what: (c.ok, c.detail) for c in run.checks}
    assert checks["step 3: reboot approved within 1h"] == (
        False,
        "it started without every approval (not_before)",
    )


def test_unmet_expectations_and_refused_steps_fail_the_run() -> None:
    scenario = _scenario(
        "steps:\n"
        "  - {do: host-update, on: host-4, as: maintenance}\n"
        "  - {do: user-reboot, on: host-4}\n"  # a user reboots a VM, never a host
        "expect:\n"
        "  - {operation: maintenance, state: canceled, events: 3}\n"
        "  - {vm: jumpbox, saw: [Freeze Scheduled, Freeze Started], status: running}\n"
        "  - {vm: web-0, saw: []}\n"
    )
    with Forewarn() as forewarn:
        run = Runner(ControlClient(forewarn.control_url)).run(scenario)
    checks = [(c.what, c.ok, c.detail) for c in run.checks]
    assert checks == [
        ("step 2: user-reboot host-4", False,
         "user-reboot is a user operation; name a VM, not a host (HTTP 400)"),
        ("maintenance is canceled", False, "completed"),
        ("maintenance raised 3 events", True, "3"),  # web, workers, jumpbox on host-4
        ("jumpbox saw Freeze Scheduled, Freeze Started", True,
         "Freeze Scheduled, Freeze Started"),
        ("jumpbox is running", True, "running"),
        ("web-0 saw nothing", True, "nothing"),
    ]  # fmt: skip
    assert not run.ok


def test_run_exit_codes_and_json(start_server: Any, tmp_path: Path) -> None:
    server: ServerProcess = start_server(VIRTUAL)
    held = run_cli(["scenario", "run", "user-redeploy"], server.control_url)
    assert held.code == 0, held.stdout + held.stderr
    assert "user-redeploy: virtual clock, time scale 1" in held.stdout
    assert "step 1/2: user-redeploy vm web-0 as redeploy" in held.stdout
    assert "user-redeploy: every expectation held (4 checks), T+20m of platform time" in (
        held.stdout
    )
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(
        "steps: [{do: live-migration, on: host-3, as: m}]\n"
        "expect: [{operation: m, vms_saw: [Freeze Started]}]\n",
        "utf-8",
    )
    failed = run_cli(["scenario", "run", str(wrong), "--json"], server.control_url)
    assert failed.code == 1, failed.stderr
    outcome = json.loads(failed.stdout)
    assert outcome["ok"] is False
    assert outcome["seen"]["web-2"] == ["Freeze Scheduled", "Freeze Started"]
    [check] = [c for c in outcome["checks"] if not c["ok"]]
    assert check["what"] == "each VM of m saw Freeze Started"
    assert "web-2 saw Freeze Scheduled, Freeze Started" in check["found"]
    unreachable = run_cli(["scenario", "run", "user-reboot"], "http://127.0.0.1:9")
    assert unreachable.code == 2
    assert unreachable.stderr.startswith("forewarn: error: cannot reach the control API")


def test_a_scaled_real_clock_run(start_server: Any) -> None:
    """host-maintenance at --time-scale 120: 15 min of notice in 7.5 s, every state seen
    (Started lasts 2.5 s: the runner wakes for each transition rather than a poll later)."""
    server: ServerProcess = start_server(
        ["--clock", "real", "--time-scale", "120", "--enablement", "always"]
    )
    result = run_cli(["scenario", "run", "host-maintenance", "--json"], server.control_url)
    assert result.code == 0, result.stdout + result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["virtual"] is False and outcome["time_scale"] == 120
    assert outcome["seen"] == {
        vm: ["Freeze Scheduled", "Freeze Started"] for vm in ("web-0", "workers_1", "FrontEnd_IN_0")
    }
    assert 20 * 60 <= outcome["platform_seconds"] < 40 * 60


def test_one_drill_one_verdict_the_run_says_what_the_report_says(
    start_server: Any, tmp_path: Path
) -> None:
    """A rollout nobody polls for: the expectations (what the platform did) hold, and the
    run says, on each of its surfaces, that they do not judge how the fleet reacted, and
    what the report says of it: the same verdict and progress as ``forewarn report``."""
    server: ServerProcess = start_server(VIRTUAL)
    junit = tmp_path / "drill.xml"
    played = run_cli(["scenario", "run", "host-os-rollout", "--junit", str(junit)],
                     server.control_url, columns=80)  # fmt: skip
    assert played.code == 0, played.stdout + played.stderr
    [row] = server.control("GET", "/api/v1/reactions").json()["operations"]
    assert row["verdict"] == "fail" and "6 never saw it" in row["progress"], row
    lines = played.stdout.splitlines()
    [at] = [n for n, line in enumerate(lines) if line.startswith("host-os-rollout: every")]
    assert lines[at].startswith("host-os-rollout: every expectation held (5 checks)")
    assert (
        lines[at + 1] == "the fleet's reaction, not judged by the expectations (forewarn report):"
    )
    assert all(len(line) <= 80 for line in lines[at + 1 :]), lines[at:]
    assert " ".join(" ".join(lines[at + 2 :]).split()) == f"rollout: fail, {row['progress']}"
    report = run_cli(["report"], server.control_url)
    assert "1 operation: 0 no-notice, 1 fail" in report.stdout
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    reaction = cases["how the fleet reacted to rollout"]
    skipped = reaction.find("skipped")
    assert skipped is not None and reaction.find("failure") is None
    assert skipped.get("message") == (
        f"not judged by the expectations; forewarn report: fail, {row['progress']}"
    )
    as_json = json.loads(run_cli(["scenario", "run", "host-os-rollout", "--json", "--reset"],
                                 server.control_url).stdout)  # fmt: skip
    [reacted] = as_json["fleet_reaction"]
    rows = server.control("GET", "/api/v1/reactions").json()["operations"]
    [again] = [r for r in rows if r["id"] == reacted["operation"] and r["id"] != row["id"]]
    assert as_json["fleet_reaction"] == [
        {"name": "rollout", "operation": again["id"], "verdict": "fail",
         "progress": again["progress"], "judged": False}
    ]  # fmt: skip
