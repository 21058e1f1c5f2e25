"""The docs' "With the Azure CLI" and "Managed identity on a VM" commands (docs/paths/
drive-it-like-azure.md), run as they stand (with bash and the real az) against a real
server serving the demo fleet: only the install line and the server's own start are left
to the test, and the addresses are the test server's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.arm.conftest import start_arm_server
from tests.support.azcli import az_executable
from tests.support.docpages import blocks as fenced
from tests.support.docpages import section

PAGE = "paths/drive-it-like-azure.md"


def _blocks(heading: str) -> list[str]:
    return fenced(section(PAGE, heading), "sh")


def doc_examples() -> list[str]:
    """The docs' blocks this module runs, in order: the two sections' shell blocks."""
    return _blocks("## With the Azure CLI") + _blocks("## Managed identity on a VM")


def test_the_readme_cli_and_managed_identity_commands_run(tmp_path: Path) -> None:
    az = az_executable()
    blocks = doc_examples()
    assert len(blocks) == 3, "the sections' shell blocks moved"
    script = "\n".join(blocks)
    install, serve = script.splitlines()[:2]
    assert install.startswith("python3 -m venv .venv-az") and "azure-cli" in install
    assert serve.startswith(".venv/bin/forewarn serve --arm-bind 127.0.0.1:8443")
    script = "\n".join(script.splitlines()[2:])
    demo = tmp_path / "demo"
    demo.mkdir()
    arm = start_arm_server(demo, None)  # the demo fleet, a virtual clock: nothing moves unasked
    try:
        script = (
            script.replace("https://127.0.0.1:8443", arm.url)
            .replace("http://127.0.0.1:8169", arm.server.imds_url)
            .replace("$PWD/forewarn-ca/ca.pem", arm.ca)
            .replace("az=.venv-az/bin/az", f"az={az}")
            .replace("python3 -c 'from azure.identity", f"{sys.executable} -c 'from azure.identity")
        )
        home = tmp_path / "home"
        home.mkdir()
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=tmp_path,
            env={
                "PATH": "/usr/bin:/bin",
                "HOME": str(home),
                "AZURE_CONFIG_DIR": str(home / "az"),
                "AZURE_CORE_COLLECT_TELEMETRY": "false",
            },
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        arm.server.stop()
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert out.count('"EventType":"Reboot"') == 2, out
    assert '"EventStatus":"Scheduled"' in out and '"EventSource":"User"' in out
    assert '"EventStatus":"Started"' in out
    assert '"PowerState/starting"' in out
    assert '"systemAssignedIdentity"' in out  # az login --identity
