"""The site's Python examples run as they stand: the Azure SDK's on "Drive it like Azure"
against a real server; the pytest plugin's on "Test my agent or handler in CI" is the
README's, which tests/testing/test_plugin.py runs. (The pages' shell commands are not run
yet: issue 29's second part.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.arm.conftest import start_arm_server

DOCS = Path(__file__).resolve().parents[2] / "docs"


def python_blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), re.DOTALL)


def test_the_plugin_example_is_the_one_the_readme_runs() -> None:
    """tests/testing/test_plugin.py runs the README's block, and shows it can fail: the
    page's must be that block, character for character."""
    from tests.testing.test_plugin import readme_example

    assert python_blocks("paths/test-in-ci.md") == [readme_example()]


def test_the_sdk_example_restarts_the_jumpbox(tmp_path: Path) -> None:
    [example] = python_blocks("paths/drive-it-like-azure.md")
    assert "https://127.0.0.1:8443" in example and '"forewarn-ca/ca.pem"' in example
    fleet = "scopes:\n  - kind: standalone\n    name: jumpbox\n"
    arm = start_arm_server(tmp_path, fleet, ("--time-scale", "600"), clock="real")
    try:
        code = example.replace("https://127.0.0.1:8443", arm.url)
        code = code.replace('"forewarn-ca/ca.pem"', repr(arm.ca))
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        history = arm.history()
    finally:
        arm.server.stop()
    created = [h for h in history if h["kind"] == "operation.created"]
    assert [(h["detail"].get("via"), h["detail"].get("kind")) for h in created] == [
        ("arm", "user-reboot")
    ], created
    kinds = {h["kind"] for h in history}
    assert {"event.scheduled", "event.started", "operation.started"} <= kinds, kinds
