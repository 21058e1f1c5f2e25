"""The docs' pages each start a ``forewarn serve`` on the default ports; a newcomer coming
from the README's demo still has its server running. The rollout drill's page says to stop
it first, and what happens otherwise is what it says: exit 1, address in use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.cli import cli_env
from tests.support.docpages import section
from tests.support.serverproc import VIRTUAL, ServerProcess


def test_the_scenario_section_says_to_stop_the_demo_server_first() -> None:
    serve = section("how-to/rollout-drill.md", "## 1. Serve the fleet")
    before, found, _ = serve.partition("--db rehearsal.db")
    assert found and "Stop the demo's server first" in before


def test_a_second_server_on_the_same_ports_exits_saying_so(tmp_path: Path) -> None:
    first = ServerProcess(tmp_path / "demo.db", VIRTUAL).start()
    try:
        second = subprocess.run(
            [sys.executable, "-m", "forewarn", "serve", *VIRTUAL, "--db",
             str(tmp_path / "rehearsal.db"), "--imds-bind", f"127.0.0.1:{first.imds_port}",
             "--control-bind", f"127.0.0.1:{first.control_port}"],
            capture_output=True, text=True, timeout=60, env=cli_env(),
        )  # fmt: skip
    finally:
        first.stop()
    assert second.returncode == 1
    assert second.stderr == (
        f"forewarn: error: cannot listen on 127.0.0.1:{first.imds_port}: Address already in use\n"
    )
