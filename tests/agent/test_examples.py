"""The shipped examples: the config passes check-config and decides as its comments say;
the systemd unit passes ``systemd-analyze verify``."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from forewarn.agent.config_layers import load_config
from forewarn.agent.config_schema import Approval
from forewarn.agent.rules import RuleBook
from tests.agent.helpers import event

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "agent"
CONFIG = EXAMPLES / "agent.toml"
UNIT = EXAMPLES / "forewarn-agent.service"


def forewarn(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "forewarn", "agent", *args],
        capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=60,
    )  # fmt: skip


def test_the_example_config_passes_check_config() -> None:
    result = forewarn("check-config", "--skip-programs", "-c", str(CONFIG))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"{CONFIG}: valid"
    assert "    eviction: handlers [notify, drain], approval after-handlers" in result.stdout
    assert "    group-maintenance: handlers [notify, node], approval coordinated" in result.stdout


def test_check_config_refuses_a_broken_copy_with_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "agent.toml"
    broken.write_text(CONFIG.read_text().replace('approval = "solo"', 'approval = "soon"'))
    result = forewarn("check-config", "-c", str(broken))
    assert result.returncode == 2
    assert result.stdout == ""
    assert error_of(result.stderr) == (
        f"forewarn agent: error: {broken}: rules[2].approval: invalid enum value 'soon'"
    )


def error_of(stderr: str) -> str:
    """The last ``forewarn agent: error:`` message of ``stderr``, unwrapped."""
    lines = stderr.splitlines()
    start = max(n for n, line in enumerate(lines) if line.startswith("forewarn agent: error:"))
    return " ".join(line.strip() for line in lines[start:])


def test_print_config_shows_the_layers(tmp_path: Path) -> None:
    result = forewarn(
        "run", "-c", str(CONFIG), "--metrics-bind", "127.0.0.1:9999", "--print-config",
        env={"FOREWARN_AGENT_POLL_INTERVAL": "3", "FOREWARN_AGENT_METRICS_BIND": "0.0.0.0:1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    effective = json.loads(result.stdout)
    assert effective["poll_interval"] == 3.0  # environment over file
    assert effective["metrics_bind"] == "127.0.0.1:9999"  # flag over environment
    assert effective["safety_margin"] == 15.0  # file over default
    assert effective["api_version"] == "2020-07-01"  # default
    bad = forewarn("run", "-c", str(CONFIG), env={"FOREWARN_AGENT_POLL_INTERVAL": "soon"})
    assert bad.returncode == 2 and "FOREWARN_AGENT_POLL_INTERVAL='soon'" in bad.stderr


def test_the_example_rules_decide_as_documented() -> None:
    book = RuleBook(load_config(CONFIG))
    preempt = book.decide(event(event_type="Preempt"), "web-0")
    assert (preempt.rule, preempt.parallel, preempt.approval) == (
        "eviction", True, Approval.AFTER_HANDLERS,
    )  # fmt: skip
    hardware = book.decide(event(event_type="Redeploy", source="Platform"), "web-0")
    assert (hardware.rule, hardware.act_minutes_before) == ("degraded-hardware", 60)
    group = book.decide(event(event_type="Reboot", resources=("web-0", "web-3")), "web-0")
    assert (group.rule, group.approval, group.recovery) == (
        "group-maintenance", Approval.COORDINATED, ("node",),
    )  # fmt: skip
    reboot = book.decide(event(event_type="Reboot", source="User"), "web-0")
    assert (reboot.rule, reboot.recovery) == ("reboot", ("node", "notify"))
    assert book.decide(event(resources=("web-1",)), "web-0").rule == "not-this-vm"
    assert book.decide(event(event_type="Freeze", duration=5), "web-0").ignore
    assert book.decide(event(event_type="Freeze", duration=30), "web-0").rule == "long-freeze"


def test_the_systemd_unit_verifies(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed here")
    # The unit runs /opt/forewarn/bin/forewarn; verify checks the binary exists, so point it
    # at this environment's forewarn and change nothing else.
    unit = tmp_path / UNIT.name
    here = Path(sys.executable).parent / "forewarn"
    unit.write_text(UNIT.read_text().replace("/opt/forewarn/bin/forewarn", str(here)))
    assert str(here) in unit.read_text()
    result = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True,
                            timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "", result.stderr


def test_run_refuses_what_it_cannot_start_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "a.toml"
    config.write_text(
        f'state_path = "{tmp_path / "s.db"}"\n'
        "[handlers.h]\ntype = 'python'\ntarget = 'no_such_module_here:f'\n"
    )
    result = forewarn("run", "-c", str(config))
    assert result.returncode == 1
    assert error_of(result.stderr) == (
        "forewarn agent: error: handler: cannot import no_such_module_here: "
        "ModuleNotFoundError: No module named 'no_such_module_here'"
    )
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        config.write_text(f'state_path = "{tmp_path / "s.db"}"\n')
        result = forewarn("run", "-c", str(config), "--metrics-bind", f"127.0.0.1:{port}")
    assert result.returncode == 1
    assert error_of(result.stderr) == (
        f"forewarn agent: error: metrics_bind 127.0.0.1:{port}: Address already in use"
    )
    result = forewarn("status", "--state-path", str(tmp_path / "none.db"))
    assert result.returncode == 1
    assert f"no state file at {tmp_path / 'none.db'}" in error_of(result.stderr)
