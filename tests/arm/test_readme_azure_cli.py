"""The docs' "With the Azure CLI" and "Managed identity on a VM" commands (docs/paths/
drive-it-like-azure.md), run as they stand (with bash and the real az) against a real
server serving the demo fleet, after the page's own SDK install in an activated venv (so
``python3`` is that venv's, as the reader's is): only the server (the page's top) and the
CLI's install (CI installs it once) are left to the test, and the addresses are the test
server's."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.arm.conftest import start_arm_server
from tests.docs.readerenv import reader_environment
from tests.support.azcli import az_executable
from tests.support.docpages import blocks as fenced
from tests.support.docpages import section

PAGE = "paths/drive-it-like-azure.md"


def _blocks(heading: str) -> list[str]:
    return fenced(section(PAGE, heading), "sh")


def doc_examples() -> list[str]:
    """The docs' blocks this module runs, in order: the SDK's install, then the two
    sections' shell blocks."""
    return (
        _blocks("## The SDK")
        + _blocks("## With the Azure CLI")
        + _blocks("## Managed identity on a VM")
    )


def test_the_readme_cli_and_managed_identity_commands_run(tmp_path: Path) -> None:
    az = az_executable()
    found = doc_examples()
    assert len(found) == 4, "the sections' shell blocks moved"
    sdk, *cli = found
    assert "azure-identity" in sdk and "pip install" in sdk
    script = "\n".join(cli)
    install = script.splitlines()[0]
    assert install.startswith("python3 -m venv .venv-az") and "azure-cli" in install
    assert "forewarn serve" not in script  # the page's one server is its top's
    script = "\n".join(script.splitlines()[1:])
    demo = tmp_path / "demo"
    demo.mkdir()
    arm = start_arm_server(demo, None)  # the demo fleet, a virtual clock: nothing moves unasked
    try:
        script = (
            script.replace("https://127.0.0.1:8443", arm.url)
            .replace("http://127.0.0.1:8169", arm.server.imds_url)
            .replace("$PWD/forewarn-ca/ca.pem", arm.ca)
            .replace("az=.venv-az/bin/az", f"az={az}")
        )
        home = tmp_path / "home"
        home.mkdir()
        env = {
            **reader_environment(home),
            "AZURE_CONFIG_DIR": str(home / "az"),
            "AZURE_CORE_COLLECT_TELEMETRY": "false",
        }
        reader = f"python3 -m venv .venv\nsource .venv/bin/activate\n{sdk}\n{script}"
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-euo", "pipefail", "-c", reader],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    finally:
        arm.server.stop()
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert out.count('"EventType":"Reboot"') == 2, out
    assert '"EventStatus":"Scheduled"' in out and '"EventSource":"User"' in out
    assert '"EventStatus":"Started"' in out
    assert '"PowerState/starting"' in out
    assert '"systemAssignedIdentity"' in out  # az login --identity
