"""Fault steps: a scenario injects endpoint faults (and clears them) at points of its
timeline; the VMs' own endpoints answer with the fault, and mistakes are one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from forewarn.controlapi import ControlClient
from forewarn.scenarios import ScenarioError, load_scenario_file

ROOT = Path(__file__).resolve().parents[2]
OUTAGE = ROOT / "examples" / "scenarios" / "imds-outage.yaml"


def test_a_fault_step_makes_the_vms_endpoints_fail_until_it_ends_or_is_cleared(
    play: Any,
) -> None:
    played = play(load_scenario_file(OUTAGE))
    run, watch = played.run, played.watch
    assert run.ok, [(c.what, c.detail) for c in run.checks if not c.ok]
    whats = [c.what for c in run.checks]
    assert "each VM of reboot saw Reboot Scheduled, Reboot Started" in whats
    summaries = [s.summary for s in run.steps]
    assert summaries[0].startswith("fault: HTTP 410 on web for 70s (fault-")
    assert summaries[1].startswith("fault: HTTP 503 on web-1 until cleared (fault-")
    assert summaries[-1] == "cleared 1 fault(s)"  # the 410 had ended by itself
    # before the first step: a faithful answer; then 410 while the fault lasted; the
    # first answer after it came at the +2m step (the 70 s were over), with the reboot
    assert watch.timeline("web-0") == [
        (0.0, []),
        "HTTP 410",
        (120.0, []),
        (120.0, ["Reboot Scheduled"]),
        (1020.0, ["Reboot Started"]),
        (1620.0, []),
    ]
    # web-1: the 410 (added first) hit first, then the 503 until the clear step
    assert watch.timeline("web-1") == [(0.0, []), "HTTP 410", "HTTP 503", (1620.0, [])]
    # a VM of another scope never met a fault
    assert all(not isinstance(d, str) for d in watch.timeline("workers_0"))
    assert ControlClient(watch.forewarn.control_url).faults() == []


CASES = [
    ("{kind: status, status: 404}", "status 404 is not one of 410, 429, 500, 503", ".status"),
    ("{kind: status}", "a status fault needs status", ""),
    ("{kind: slow}", "unknown fault kind 'slow'; known: status, latency", ".kind"),
    ("{kind: latency, latency: 2, status: 500}", "status is only for status faults", ".status"),
    ("{kind: timeout, vm: web-0, scope: web}", "give vm or scope", ""),
    ("{kind: reset, share: 2}", "share 2 must be over 0, up to 1", ".share"),
    ("{kind: cotenant, rate: 4, share: 0.5}", "a co-tenant polls all the time", ".share"),
    ("{kind: reset, for: soon}", "", ".for"),
    ("{kind: reset, colour: red}", "Object contains unknown field `colour`", ""),
]


@pytest.mark.parametrize(("fault", "problem", "key"), CASES, ids=[c[0] for c in CASES])
def test_a_bad_fault_step_is_one_line_naming_line_and_key(
    tmp_path: Path, fault: str, problem: str, key: str
) -> None:
    file = tmp_path / "drill.yaml"
    file.write_text(f"steps:\n  - {{do: user-reboot, on: web-0}}\n  - fault: {fault}\n", "utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario_file(file)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"scenario file {file}, line 3: {problem}"), message
    assert message.endswith(f"`$.steps[1].fault{key}`"), message


@pytest.mark.parametrize(
    ("step", "problem"),
    [
        ("{fault: {kind: reset}, clear_faults: true}", "a step injects a fault or clears faults"),
        ("{fault: {kind: reset}, do: user-reboot, on: web-0}", "a fault step does not also do"),
        ("{clear_faults: false}", "clear_faults: true clears every fault"),
    ],
)
def test_a_fault_step_does_one_thing(tmp_path: Path, step: str, problem: str) -> None:
    file = tmp_path / "drill.yaml"
    file.write_text(f"steps:\n  - {step}\n", "utf-8")
    with pytest.raises(ScenarioError, match=problem):
        load_scenario_file(file)


def test_a_fault_step_compiles_with_its_window_in_platform_seconds(tmp_path: Path) -> None:
    file = tmp_path / "drill.yaml"
    file.write_text(
        "steps:\n"
        "  - {at: 1m, fault: {kind: latency, latency: 2.5, vm: web-0, for: 2h, share: 0.5}}\n"
        "  - {clear_faults: true}\n",
        "utf-8",
    )
    inject, clear = load_scenario_file(file).steps
    assert inject.fault is not None and inject.fault_for == 7200.0 and inject.at == 60.0
    assert inject.summary() == "fault: +2.5s latency on web-0 on 0.5 of requests for 7200s"
    assert clear.clear_faults and clear.summary() == "clear every fault"
