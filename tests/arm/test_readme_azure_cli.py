"""The README's "With the Azure CLI" and "Managed identity on a VM" commands, run as they
stand (with bash and the real az) against a real server serving the demo fleet: only the
install line and the server's own start are left to the test, and the addresses are the
test server's."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.arm.conftest import ArmServer
from tests.support.azcli import az_executable
from tests.support.serverproc import ServerProcess, free_port

README = Path(__file__).resolve().parents[2] / "README.md"


def _blocks(start: str, end: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split(start, 1)[1].split(end, 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def test_the_readme_cli_and_managed_identity_commands_run(tmp_path: Path) -> None:
    az = az_executable()
    blocks = _blocks("### With the Azure CLI", "### Managed identity on a VM")
    blocks += _blocks("### Managed identity on a VM", "## Outside the VM")
    assert len(blocks) == 3, "the sections' shell blocks moved"
    script = "\n".join(blocks)
    install, serve = script.splitlines()[:2]
    assert install.startswith("python3 -m venv .venv-az") and "azure-cli" in install
    assert serve.startswith(".venv/bin/forewarn serve --arm-bind 127.0.0.1:8443")
    script = "\n".join(script.splitlines()[2:])
    demo = tmp_path / "demo"
    demo.mkdir()
    arm = _demo_server(demo)  # the demo fleet, on a virtual clock: nothing moves unasked
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


def _demo_server(tmp: Path) -> ArmServer:
    port = free_port()
    server = ServerProcess(
        tmp / "forewarn.db",
        ["--clock", "virtual", "--enablement", "always", "--rate-limit", "0",
         "--arm-bind", f"127.0.0.1:{port}", "--arm-ca-dir", str(tmp / "ca")],
    ).start(timeout=60)  # fmt: skip
    line = next(line for line in server.banner if "ARM on" in line)
    match = re.search(r"ARM on (https://\S+) .* trust (\S+) ", line)
    assert match, line
    return ArmServer(server, match.group(1), match.group(2))
