"""What the ``forewarn exec`` tests share: a real ``forewarn serve`` of a fleet with a
scale set of twenty, an availability set, a standalone VM and a cloud service; and
``forewarn exec`` run as root and as an unprivileged user (``setpriv`` to nobody: a user
namespace), as a user runs it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.serverproc import VIRTUAL, ServerProcess

SCALE_SET = "aks-default-36328368-vmss"
FLEET = f"""
hosts: 6
scopes:
  - kind: scale_set
    name: {SCALE_SET}
    vms: 20
    update_domains: 5
  - kind: availability_set
    name: web
    vms: 2
    update_domains: 2
  - kind: standalone
    name: db
  - kind: cloud_service
    name: shop
    roles: {{FrontEnd: 1}}
"""
REPO = Path(__file__).resolve().parents[2]
#: The unprivileged user the tests act as (``setpriv``, as the preamble of a CI job would).
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
#: An interpreter any user reaches from a user namespace (this test's may live in a home
#: directory only its owner enters), for the programs run inside that need no packages.
SYSTEM_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def vm_name(instance: int) -> str:
    return f"{SCALE_SET}_{instance}"


def userns_works() -> bool:
    probe = [*NOBODY, "unshare", "--user", "--map-root-user", "--net", "true"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    base = tmp_path_factory.mktemp("vmexec")
    fleet = base / "fleet.yaml"
    fleet.write_text(FLEET)
    proc = ServerProcess(base / "forewarn.db", [*VIRTUAL, "--fleet", str(fleet)]).start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(autouse=True)
def fresh_fleet(server: ServerProcess) -> None:
    """Every test starts from a fleet without events."""
    response = server.control("POST", "/api/v1/fleet/reset", json={})
    assert response.status_code == 200, response.text


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory both root and the unprivileged user read and write."""
    path = Path(tempfile.mkdtemp(prefix="forewarn-vmexec-"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@dataclass
class Exec:
    """``forewarn exec`` against ``server``, as root or as nobody."""

    server: ServerProcess
    user: str
    cwd: Path
    procs: list[subprocess.Popen[str]] = field(default_factory=list)
    #: Where forewarn exec finds the control API (default: the server's own).
    control_url: str | None = None

    def argv(self, vm: str, command: Sequence[str], options: Sequence[str] = ()) -> list[str]:
        prefix = NOBODY if self.user == "nobody" else []
        return [
            *prefix, sys.executable, "-m", "forewarn", "--control",
            self.control_url or self.server.control_url,
            "exec", "--vm", vm, "--endpoint", self.server.imds_url, *options, "--", *command,
        ]  # fmt: skip

    def run(
        self,
        vm: str,
        *command: str,
        options: Sequence[str] = (),
        timeout: float = 90,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(vm, command, options), capture_output=True, text=True, timeout=timeout,
            cwd=self.cwd, env={**os.environ, **(env or {})},
        )  # fmt: skip

    def start(
        self, vm: str, *command: str, options: Sequence[str] = (), **kwargs: Any
    ) -> subprocess.Popen[str]:
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.PIPE)
        proc = subprocess.Popen(self.argv(vm, command, options), text=True, cwd=self.cwd, **kwargs)
        self.procs.append(proc)
        return proc

    def python(self) -> list[str]:
        """forewarn's own interpreter and packages as COMMAND (the agent, the VM commands)."""
        if self.user == "root":
            return [sys.executable]
        path = os.pathsep.join([str(REPO / "src"), sysconfig.get_paths()["purelib"]])
        return ["env", f"PYTHONPATH={path}", SYSTEM_PYTHON]

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


@pytest.fixture(params=["root", "nobody"])
def vmexec(
    request: pytest.FixtureRequest, server: ServerProcess, shared_dir: Path
) -> Iterator[Exec]:
    """``forewarn exec`` as root, then as an unprivileged user (where the kernel lets one
    make user namespaces)."""
    if request.param == "nobody" and not userns_works():
        pytest.skip("unprivileged user namespaces are off on this machine")
    runner = Exec(server, request.param, shared_dir)
    try:
        yield runner
    finally:
        runner.stop_all()


def trigger(server: ServerProcess, kind: str, target: str) -> str:
    """Start ``kind`` on ``target``; its one event's id."""
    response = server.control("POST", "/api/v1/operations", json={"kind": kind, "target": target})
    assert response.status_code == 201, response.text
    (event_id,) = response.json()["event_ids"]
    return str(event_id)


def event(server: ServerProcess, event_id: str) -> dict[str, Any]:
    response = server.control("GET", f"/api/v1/events/{event_id}")
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found
