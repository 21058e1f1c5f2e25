"""How ``forewarn exec`` fails: an unknown VM, a server that is down (before and while
COMMAND runs: what a VM whose endpoint is down sees), a system without namespaces; and a
SIGKILL of forewarn mid-request leaves no process, namespace or mount behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sysconfig
from pathlib import Path

from tests.support.serverproc import VIRTUAL, ServerProcess
from tests.support.waiting import wait_until
from tests.vmexec.conftest import FLEET, REPO, SYSTEM_PYTHON, Exec

HERE = Path(__file__).parent
CURL = ["curl", "-sS", "-H", "Metadata:true",
        "http://169.254.169.254/metadata/scheduledevents?api-version=2020-07-01"]  # fmt: skip


def test_an_unknown_vm_is_one_error_line_and_command_never_runs(
    vmexec: Exec, shared_dir: Path
) -> None:
    marker = shared_dir / "ran"
    ran = vmexec.run("web-9", "touch", str(marker))
    assert ran.returncode == 1
    assert ran.stderr.startswith("forewarn: error: the fleet at ")
    assert ": no VM named 'web-9' (its VMs: aks-default-36328368-vmss_0, " in ran.stderr
    assert ran.stderr.endswith(" and 16 more)\n")  # 24 VMs, 8 named
    assert len(ran.stderr.splitlines()) == 1
    assert not marker.exists()


def test_a_server_that_is_down_before_and_while_command_runs(vmexec: Exec, tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(FLEET)
    down = ServerProcess(tmp_path / "down.db", [*VIRTUAL, "--fleet", str(fleet)])
    before = Exec(down, vmexec.user, vmexec.cwd).run("web-0", "true")
    assert before.returncode == 1 and len(before.stderr.splitlines()) == 1
    assert "cannot reach the control API" in before.stderr
    down.start()
    try:
        runner = Exec(down, vmexec.user, vmexec.cwd)
        # COMMAND polls once, waits until the server is gone, then polls again
        script = f"{' '.join(CURL)} -o /dev/null -w '%{{http_code}}\\n'; read _; {' '.join(CURL)}"
        vm = runner.start("web-0", "sh", "-c", script, stdin=subprocess.PIPE)
        assert vm.stdout is not None and vm.stdin is not None
        assert vm.stdout.readline() == "200\n"
        down.kill()
        vm.stdin.write("\n")
        vm.stdin.close()
        # what a client sees of an address nobody serves: the relay resets the connection at
        # once (curl: "Couldn't connect", or a reset if its request was already on the way:
        # while sending it, 55, or waiting for the answer, 56)
        code = vm.wait(timeout=60)
        assert vm.stderr is not None
        said = vm.stderr.read()
        refused = (code, "Couldn't connect to server" in said) == (7, True)
        reset = code in (55, 56) and "reset by peer" in said
        assert refused or reset, (code, said)
    finally:
        down.stop()


def test_no_namespaces_names_the_way_that_still_works(server: ServerProcess) -> None:
    """Inside a user namespace whose ``user.max_user_namespaces`` is 0, nobody can make
    one: one error line, naming --url and FOREWARN_IMDS_URL."""
    if os.geteuid() != 0:
        import pytest

        pytest.skip("the namespace without namespaces is made as root")
    path = os.pathsep.join([str(REPO / "src"), sysconfig.get_paths()["purelib"]])
    argv = [
        SYSTEM_PYTHON, str(HERE / "no_userns.py"), "env", f"PYTHONPATH={path}", SYSTEM_PYTHON,
        "-m", "forewarn", "--control", server.control_url, "exec", "--vm", "web-0",
        "--endpoint", server.imds_url, "--", "true",
    ]  # fmt: skip
    ran = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd="/")
    assert ran.returncode == 1, ran.stderr
    assert len(ran.stderr.splitlines()) == 1, ran.stderr
    line = ran.stderr.strip()
    assert line.startswith("forewarn: error: cannot give VM 'web-0' its own network namespace")
    assert "user.max_user_namespaces is 0" in line
    assert f"FOREWARN_IMDS_URL={server.imds_url}" in line and f"--url {server.imds_url}" in line


def _net_namespaces() -> dict[int, str]:
    """Every process of the machine and its network namespace."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found[int(entry.name)] = os.readlink(entry / "ns" / "net")
            except OSError:
                continue
    return found


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rpartition(")")[2].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def test_a_sigkill_of_forewarn_mid_request_leaves_nothing_behind(
    vmexec: Exec, server: ServerProcess, shared_dir: Path
) -> None:
    mounts = Path("/proc/self/mountinfo").read_text()
    fault = {"kind": "timeout", "vm": "FrontEnd_IN_0"}  # accepted, never answered
    response = server.control("POST", "/api/v1/faults", json=fault)
    assert response.status_code in (200, 201), response.text
    try:
        # a role instance: its lease file is mounted in its own mount namespace too
        vm = vmexec.start("FrontEnd_IN_0", "sh", "-c", f"sleep 600 & exec {' '.join(CURL)}")
        wait_until(
            lambda: any(f["hits"] for f in server.control("GET", "/api/v1/faults").json()),
            60, "the request the endpoint holds",
        )  # fmt: skip
        inner = _descendants(vm.pid)  # the sandbox, its init, sh's sleep, curl
        assert len(inner) >= 4, inner
        netns = {_net_namespaces().get(pid) for pid in inner} - {None}
        assert len(netns - {os.readlink("/proc/self/ns/net")}) == 1, netns
        vm.send_signal(signal.SIGKILL)
        vm.wait(timeout=30)

        def gone() -> bool:
            alive = _net_namespaces()
            return not inner & set(alive) and not netns & set(alive.values()) - {
                os.readlink("/proc/self/ns/net")
            }

        wait_until(gone, 30, "every process of the VM and its network namespace gone")
        assert Path("/proc/self/mountinfo").read_text() == mounts
    finally:
        server.control("DELETE", "/api/v1/faults", json={})
