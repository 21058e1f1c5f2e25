"""Operator-facing details: secrets masked, programs checked, one-line notes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from forewarn.agent.approval import Step, plan
from forewarn.agent.config_schema import Approval
from forewarn.agent.text import one_line
from tests.agent.test_examples import CONFIG


def forewarn(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "forewarn", "agent", *args],
        capture_output=True, text=True, env=dict(os.environ), timeout=60,
    )  # fmt: skip


SECRETS = """
[coordination]
backend = "redis"
url = "redis://:hunter2@redis.internal:6379/0"

[handlers.notify]
type = "webhook"
url = "https://user:pa55@hooks.example.com/x?ok=1"
headers = { Authorization = "Bearer s3cr3t-token", X-Trace = "visible" }

[[rules]]
event_types = ["Reboot"]
handlers = ["notify"]
approval = "coordinated"
"""


def test_print_config_masks_tokens_and_passwords(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(SECRETS)
    result = forewarn("run", "-c", str(path), "--print-config")
    assert result.returncode == 0, result.stderr
    for secret in ("hunter2", "s3cr3t-token", "pa55"):
        assert secret not in result.stdout
    shown = json.loads(result.stdout)
    assert shown["coordination"]["url"] == "redis://:***@redis.internal:6379/0"
    notify = shown["handlers"]["notify"]
    assert notify["headers"] == {"Authorization": "***", "X-Trace": "visible"}
    assert notify["url"] == "https://user:***@hooks.example.com/x?ok=1"


def test_check_config_refuses_an_exec_handler_whose_program_is_missing(tmp_path: Path) -> None:
    script = tmp_path / "drain.sh"
    path = tmp_path / "agent.toml"
    body = """
        [handlers.drain]
        type = "exec"
        argv = ["{argv0}", "--now"]

        [[rules]]
        event_types = ["Reboot"]
        handlers = ["drain"]
    """
    path.write_text(body.replace("        ", "").format(argv0=script))
    result = forewarn("check-config", "-c", str(path))
    assert result.returncode == 2
    said = " ".join(line.strip() for line in result.stderr.splitlines())
    assert said.endswith(f"handlers.drain.argv: {str(script)!r} does not exist")
    script.write_text("#!/bin/sh\nexit 0\n")
    result = forewarn("check-config", "-c", str(path))
    assert result.returncode == 2 and "is not executable" in " ".join(result.stderr.split())
    script.chmod(0o755)
    result = forewarn("check-config", "-c", str(path))
    assert result.returncode == 0, result.stderr
    path.write_text(body.replace("        ", "").format(argv0="no-such-program-xyz"))
    result = forewarn("check-config", "-c", str(path))
    assert result.returncode == 2 and "'no-such-program-xyz' is not on PATH" in " ".join(
        result.stderr.split()
    )


def test_the_example_names_programs_this_machine_lacks() -> None:
    result = forewarn("check-config", "-c", str(CONFIG))
    assert result.returncode == 2
    assert "'/usr/local/bin/drain-traffic' does not exist" in " ".join(result.stderr.split())


def test_a_failed_handler_note_says_not_approved_once_on_one_line() -> None:
    from tests.agent.test_approval import SOLO

    stderr = 'error: unable to drain node "n1"\n  pods: web-7f\n\n  timed out\n'
    step = plan(Approval.AFTER_HANDLERS, False, f"handler node failed: {stderr}", SOLO, "web-0")
    assert step.step == Step.SKIP
    note = f"not approved: {one_line(step.reason)}"
    assert note.count("not approved") == 1
    assert "\n" not in note
    assert note.endswith("pods: web-7f | timed out")
