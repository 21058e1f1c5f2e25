"""The README's azure-mgmt-compute example runs as it stands against a real server."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.arm.conftest import start_arm_server

README = Path(__file__).resolve().parents[2] / "README.md"


def _example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Azure's control plane (ARM)", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the ARM section has no Python example"
    return match.group(1)


def test_the_readme_example_restarts_the_jumpbox(tmp_path: Path) -> None:
    fleet = "scopes:\n  - kind: standalone\n    name: jumpbox\n"
    arm = start_arm_server(tmp_path, fleet, ("--time-scale", "600"), clock="real")
    try:
        code = _example()
        code = code.replace("https://127.0.0.1:8443", arm.url)
        code = code.replace('"forewarn-ca/ca.pem"', repr(arm.ca))
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr[-2000:]
        history = arm.history()
    finally:
        arm.server.stop()
    kinds = [(h["kind"], h["detail"].get("via")) for h in history]
    assert ("scope.policy", "arm") in kinds
    assert ("operation.created", "arm") in kinds
    started = [h for h in history if h["kind"] == "operation.started"]
    assert started and started[0]["detail"].get("reason") != "not_before"  # auto-approved
