"""``arm:`` steps: a scenario calls the server's ARM listener over HTTPS, the way
azure-mgmt-compute does, and the platform's answer is what the VMs see."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from forewarn.controlapi import ControlClient
from forewarn.scenarios import ArmAccess, Runner, ScenarioError
from forewarn.scenarios.model import parse_scenario
from forewarn.testing import Forewarn
from tests.cli.conftest import run_cli

FLEET = """\
resource_group: rg-drill
scopes:
  - kind: availability_set
    name: web
    vms: 2
"""

SCENARIO = """\
steps:
  - {arm: {action: restart, vm: web-1}, as: boot}
  - {wait: ended, for: boot, within: 1h}
  - {arm: {action: restart, vm: nope}}
expect:
  - {operation: boot, state: completed, started: not_before}
  - {vm: web-1, saw: [Reboot Scheduled, Reboot Started]}
  - {vm: web-0, saw: []}
"""


def _access(forewarn: Forewarn) -> ArmAccess:
    return ArmAccess(forewarn.arm_url, forewarn.arm_ca, forewarn.subscription,
                     forewarn.resource_group)  # fmt: skip


def test_an_arm_step_restarts_a_vm_through_arm() -> None:
    scenario = parse_scenario(yaml.safe_load(SCENARIO), "armdrill")
    with Forewarn(FLEET, arm=True) as forewarn:
        control = ControlClient(forewarn.control_url)
        run = Runner(control, arm=_access(forewarn)).run(scenario)
        ops = control.operations()
        control.close()
    checks = [(c.what, c.ok) for c in run.checks]
    assert ("boot is completed", True) in checks
    assert ("web-1 saw Reboot Scheduled, Reboot Started", True) in checks
    assert ("web-0 saw nothing", True) in checks
    refused = [c for c in run.checks if c.what.startswith("step 3")]
    assert len(refused) == 1 and not refused[0].ok
    assert "ResourceNotFound" in refused[0].detail and "(HTTP 404)" in refused[0].detail
    assert [(op["kind"], op["via"], op["vms"]) for op in ops] == [("user-reboot", "arm", ["web-1"])]


def test_without_an_arm_listener_the_run_is_refused_in_one_line() -> None:
    scenario = parse_scenario(yaml.safe_load(SCENARIO), "armdrill")
    with Forewarn(FLEET) as forewarn:
        control = ControlClient(forewarn.control_url)
        with pytest.raises(ScenarioError) as caught:
            Runner(control).run(scenario)
        assert control.operations() == []
        control.close()
    assert str(caught.value) == (
        "step 1 calls ARM, but this server has no ARM listener "
        "(serve with --arm-bind; give its URL and CA)"
    )


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ("{arm: {action: powerOff, vm: web-0}}",
         "unknown ARM action 'powerOff'; known: restart, redeploy, reimage"
         " - at `$.steps[0].arm.action`"),
        ("{arm: {action: restart, vm: web-0}, do: user-reboot}",
         "give do: or arm:, not both (arm: names its vm:) - at `$.steps[0].arm`"),
        ("{arm: {action: restart, vm: web-0}, notice: 5m}",
         "notice is not something an ARM call takes - at `$.steps[0].notice`"),
        ("{arm: {action: restart}}", "Object missing required field `vm` - at `$.steps[0].arm`"),
    ],
)  # fmt: skip
def test_bad_arm_steps_are_refused_on_load(step: str, message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(yaml.safe_load(f"steps:\n  - {step}\n"), "bad")
    assert str(caught.value) == f"scenario: {message}"


def test_scenario_run_cli_takes_the_arm_listener(tmp_path: Path) -> None:
    drill = tmp_path / "drill.yaml"
    drill.write_text(
        "steps: [{arm: {action: redeploy, vm: web-0}, as: move}]\n"
        "expect: [{operation: move, state: completed}]\n",
        "utf-8",
    )
    with Forewarn(FLEET, arm=True) as forewarn:
        refused = run_cli(["scenario", "run", str(drill)], forewarn.control_url)
        played = run_cli(
            ["scenario", "run", str(drill), "--json", "--arm", forewarn.arm_url,
             "--arm-ca", forewarn.arm_ca, "--arm-subscription", forewarn.subscription,
             "--arm-resource-group", forewarn.resource_group],
            forewarn.control_url,
        )  # fmt: skip
    assert refused.code == 2
    assert refused.stderr.strip().endswith(
        "step 1 calls ARM, but this server has no ARM listener "
        "(serve with --arm-bind; give its URL and CA)"
    )
    assert played.code == 0, played.stdout + played.stderr
    outcome = json.loads(played.stdout)
    assert outcome["ok"] is True
    assert outcome["operations"]["move"][0]["kind"] == "user-redeploy"


def test_the_arm_options_default_to_the_names_of_a_fleet_that_gives_none(tmp_path: Path) -> None:
    """A fleet file without subscription or resource group: ``--arm`` and ``--arm-ca``
    are enough (the defaults were another subscription than the fleet's)."""
    drill = tmp_path / "drill.yaml"
    drill.write_text(
        "steps: [{arm: {action: restart, vm: web-1}, as: kick}]\n"
        "expect: [{operation: kick, state: completed}]\n",
        "utf-8",
    )
    fleet = "scopes:\n  - {kind: availability_set, name: web, vms: 2}\n"
    with Forewarn(fleet, arm=True) as forewarn:
        played = run_cli(
            ["scenario", "run", str(drill), "--json", "--arm", forewarn.arm_url,
             "--arm-ca", forewarn.arm_ca],
            forewarn.control_url,
        )  # fmt: skip
    assert played.code == 0, played.stdout + played.stderr
    assert json.loads(played.stdout)["operations"]["kick"][0]["kind"] == "user-reboot"
