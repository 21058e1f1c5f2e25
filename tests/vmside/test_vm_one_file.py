"""The VM side from its two installs, against a real ``forewarn serve``: a clean venv holding
only the wheel, and ``forewarn-vm.pyz`` (``.ci/vm_zipapp.py``) run by ``python -I`` of a
venv holding nothing at all. Every VM command runs, and the agent with an exec, a webhook
and a Kubernetes handler (a recording fake kubectl first on PATH).

Slow (a wheel built from a copy of this checkout, two venvs): FOREWARN_SLOW_TESTS=1.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.agent.kubefake import FakeCluster
from tests.support.serverproc import VIRTUAL, ServerProcess, trigger
from tests.support.waiting import wait_until
from tests.vmside.conftest import REPO, WEB0

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.environ.get("FOREWARN_SLOW_TESTS"), reason="slow: set FOREWARN_SLOW_TESTS=1"
    ),
]

INSTALLS = ["wheel", "zipapp"]


def _sh(*argv: str | Path) -> str:
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def installs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """How to run ``forewarn`` from each install: the wheel's venv, and the zipapp."""
    root = tmp_path_factory.mktemp("one-file")
    tree = root / "forewarn"
    shutil.copytree(REPO / "src", tree / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))  # fmt: skip
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, tree / name)
    _sh(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", root / "dist", tree)
    [wheel] = (root / "dist").glob("forewarn-*.whl")
    pyz = root / "forewarn-vm.pyz"
    _sh(sys.executable, REPO / ".ci" / "vm_zipapp.py", wheel, pyz)
    _sh(sys.executable, "-m", "venv", root / "wheel")
    _sh(root / "wheel" / "bin" / "pip", "install", "--quiet", "--disable-pip-version-check", wheel)
    _sh(sys.executable, "-m", "venv", "--without-pip", root / "bare")
    return {
        "wheel": [str(root / "wheel" / "bin" / "forewarn")],
        "zipapp": [str(root / "bare" / "bin" / "python"), "-I", str(pyz)],
        "wheel-python": [str(root / "wheel" / "bin" / "python")],
    }


def _run(prefix: list[str], *args: str, env: dict[str, str] | None = None,
         cwd: Path | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run([*prefix, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "80", **(env or {})}, cwd=cwd)  # fmt: skip


def test_the_wheel_s_venv_holds_one_distribution(installs: dict[str, list[str]]) -> None:
    listed = _sh(*installs["wheel-python"], "-m", "pip", "list", "--format", "json",
                 "--disable-pip-version-check")  # fmt: skip
    names = {d["name"].lower() for d in json.loads(listed)} - {"pip", "setuptools"}
    assert names == {"forewarn"}


@pytest.mark.parametrize("install", INSTALLS)
def test_every_vm_command_runs(
    install: str, installs: dict[str, list[str]], tmp_path: Path,
    start_server: Callable[..., ServerProcess],
) -> None:  # fmt: skip
    forewarn = installs[install]
    server = start_server(VIRTUAL)
    event_id = trigger(server, "user-reboot", "web-0")
    assert _run(forewarn, "--version").stdout.startswith("forewarn, version ")
    helped = _run(forewarn, "--help")
    assert "watch" in helped.stdout and "serve" in helped.stdout, helped.stderr
    lease = tmp_path / "dhclient.leases"
    lease.write_text("lease {\n  option unknown-245 a8:3f:81:10;\n}\n")
    found = _run(forewarn, "discover", "--lease-file", str(lease), "--json")
    assert json.loads(found.stdout)["url"] == "http://168.63.129.16", found.stderr
    url = server.imds_url
    watch = subprocess.Popen([*forewarn, "watch", "--url", url, "--source-address", WEB0,
                              "--interval", "0.1"], stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert watch.stdout is not None
        first = next(line for line in watch.stdout if event_id in line)
        assert "[this VM]" in first
        events = _run(forewarn, "events", "--url", url, "--source-address", WEB0, "--json")
        assert [e["EventId"] for e in json.loads(events.stdout)["Events"]] == [event_id]
        table = _run(forewarn, "events", "--url", url, "--source-address", WEB0)
        assert event_id in table.stdout and "Reboot Scheduled" in table.stdout, table.stderr
        approve = _run(forewarn, "approve", event_id, "--url", url, "--source-address", WEB0)
        assert approve.stdout.strip() == f"approved on {url}: {event_id}", approve.stderr
        assert any("Started" in line for line in watch.stdout if f"updated {event_id}" in line)
    finally:
        watch.send_signal(signal.SIGINT)
        assert watch.wait(timeout=60) == 0
    kit = _run(forewarn, "conformance", url, "--source-address", WEB0, "--rate", "50", "--json")
    assert (json.loads(kit.stdout)["vm"], json.loads(kit.stdout)["failed"]) == ("web-0", 0)
    refused = _run(forewarn, "serve") if install == "zipapp" else None
    if refused is not None:  # the zipapp holds no emulator: said in one message
        assert refused.returncode == 1
        assert "[server] extra" in " ".join(refused.stderr.split())


class _Hooks(BaseHTTPRequestHandler):
    bodies: list[dict[str, object]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.bodies.append(json.loads(self.rfile.read(length) or b"{}"))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict[str, object]]]]:
    """A webhook receiver on loopback: its URL and the bodies it got."""

    class Hooks(_Hooks):
        bodies: list[dict[str, object]] = []

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hooks)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", Hooks.bodies
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("install", INSTALLS)
def test_the_agent_runs_exec_webhook_and_kubernetes_handlers(
    install: str, installs: dict[str, list[str]], tmp_path: Path,
    start_server: Callable[..., ServerProcess], webhook: tuple[str, list[dict[str, object]]],
) -> None:  # fmt: skip
    forewarn = installs[install]
    server = start_server(VIRTUAL)
    cluster = FakeCluster(tmp_path)
    cluster.seed("web-0")
    ran = tmp_path / "exec.log"
    hook_url, bodies = webhook
    config = tmp_path / "agent.toml"
    config.write_text(f"""
vm_name = "web-0"
poll_interval = 0.2
metrics_bind = ""
shutdown = "abandon"
state_path = "{tmp_path / "state.db"}"

[handlers.record]
type = "exec"
argv = ["/bin/sh", "-c", "echo \\"$FOREWARN_EVENT_ID $FOREWARN_EVENT_TYPE\\" >> {ran}"]

[handlers.notify]
type = "webhook"
url = "{hook_url}"

[handlers.node]
type = "kubernetes"
node = "web-0"

[[rules]]
name = "reboot"
event_types = ["Reboot"]
handlers = ["record", "notify", "node"]
approval = "after-handlers"
""")
    check = _run(forewarn, "agent", "check-config", "-c", str(config), env=cluster.env())
    # at 80 columns a long temporary path stands on a line of its own, "valid" below it
    said = " ".join(check.stdout.split())
    assert check.returncode == 0 and f"{config}: valid" in said, check.stdout + check.stderr
    event_id = trigger(server, "user-reboot", "web-0")
    agent = subprocess.Popen(
        [*forewarn, "agent", "run", "-c", str(config), "--endpoint", server.imds_url,
         "--local-address", WEB0, "--log-format", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **cluster.env()},
    )  # fmt: skip
    try:
        status = lambda: server.control("GET", f"/api/v1/events/{event_id}").json()["status"]  # noqa: E731
        wait_until(lambda: status() == "Started", timeout=120, what="the agent's approval")
    finally:
        agent.send_signal(signal.SIGTERM)
        _, stderr = agent.communicate(timeout=60)
    assert agent.returncode == 0, stderr
    assert ran.read_text().split() == [event_id, "Reboot"]
    assert any(event_id in json.dumps(body) for body in bodies), bodies
    assert "cordon web-0" in cluster.calls(), cluster.calls()
    shown = _run(forewarn, "agent", "status", "-c", str(config), "--json")
    (seen,) = json.loads(shown.stdout)["events"]
    assert (seen["event_id"], seen["outcome"], seen["approval"]) == (event_id, "ok", "approved")
