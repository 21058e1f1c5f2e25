"""The site's Azure SDK example on "Drive it like Azure" runs as it stands against a real
server (its policy example: tests/arm/test_readme_example.py; the pytest plugin's:
tests/testing/test_plugin.py). The other examples of every page run, and their shown
output is compared, in tests/docs/test_shell_examples.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.arm.conftest import start_arm_server
from tests.support.docpages import blocks, page, section


def doc_examples() -> list[str]:
    """The docs' blocks this module runs: the SDK section's one Python block."""
    return blocks(section("paths/drive-it-like-azure.md", "## The SDK"), "python")


def test_the_path_shows_the_plugin_example_the_how_to_runs() -> None:
    """tests/testing/test_plugin.py runs the how-to page's block, and shows it can fail:
    the path's page shows that block, character for character, and no other."""
    from tests.testing.test_plugin import readme_example

    assert blocks(page("paths/test-in-ci.md"), "python") == [readme_example()]


def test_the_sdk_example_restarts_the_jumpbox(tmp_path: Path) -> None:
    [example] = doc_examples()
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
