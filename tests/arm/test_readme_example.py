"""The docs' azure-mgmt-compute policy example (docs/paths/drive-it-like-azure.md, the
README's before it moved there) runs as it stands against a real server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.arm.conftest import start_arm_server
from tests.support.docpages import blocks, section


def _example() -> str:
    policies = section("paths/drive-it-like-azure.md", "## Scheduled Events policies")
    found = blocks(policies, "python")
    assert found, "the policies section has no Python example"
    return found[0]


def doc_examples() -> list[str]:
    """The docs' block this module runs."""
    return [_example()]


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
