"""The site's Python examples run as they stand: the Azure SDK's on "Drive it like Azure"
against a real server (its policy example: tests/arm/test_readme_example.py); the pytest
plugin's on "Test my agent or handler in CI" is the how-to page's, which
tests/testing/test_plugin.py runs. The shell examples of every page run, and their
shown output is compared, in tests/docs/test_shell_examples.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.arm.conftest import start_arm_server
from tests.support.docpages import blocks, page, section


def python_blocks(name: str) -> list[str]:
    return blocks(page(name), "python")


def test_the_plugin_example_is_the_one_the_readme_runs() -> None:
    """tests/testing/test_plugin.py runs the how-to page's block, and shows it can fail:
    this page's must be that block, character for character."""
    from tests.testing.test_plugin import readme_example

    assert python_blocks("paths/test-in-ci.md") == [readme_example()]


def test_the_sdk_example_restarts_the_jumpbox(tmp_path: Path) -> None:
    [example] = blocks(section("paths/drive-it-like-azure.md", "## The SDK"), "python")
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
