"""What COMMAND sees at 169.254.169.254 is what the endpoint sends that VM, byte for
byte: keep-alive, ETag/304, 4xx, every metadata path, injected faults; and only that:
no other path of the server, no other port of the host unless forwarded."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from tests.support.serverproc import ServerProcess
from tests.vmexec.conftest import SYSTEM_PYTHON, Exec, trigger

HERE = Path(__file__).parent


def vm_address(server: ServerProcess, vm: str) -> str:
    [row] = [r for r in server.control("GET", "/api/v1/vms").json() if r["name"] == vm]
    return str(row["address"])


def test_a_keep_alive_exchange_is_the_same_bytes_as_from_the_vms_own_address(
    vmexec: Exec, server: ServerProcess, shared_dir: Path
) -> None:
    program = shared_dir / "exchange.py"
    program.write_text((HERE / "exchange.py").read_text())
    trigger(server, "user-reboot", "web-1")  # a document with an event in it
    inside = vmexec.run("web-1", SYSTEM_PYTHON, str(program), "169.254.169.254", "80")
    assert inside.returncode == 0, inside.stderr
    outside = subprocess.run(
        [sys.executable, str(program), "127.0.0.1", str(server.imds_port),
         vm_address(server, "web-1")],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert inside.stdout == outside.stdout
    answers = inside.stdout.split("\n----\n")
    assert [a.split(" ", 2)[1] for a in answers if a] == [
        "200", "304", "400", "200", "200", "400", "404"
    ]  # fmt: skip
    assert answers[4].endswith("\n\nweb-1")  # (text mode: CRLF read as LF)


def test_the_identity_token_and_an_injected_reset_pass_through(
    vmexec: Exec, server: ServerProcess
) -> None:
    token = vmexec.run(
        "web-0", "curl", "-s", "-H", "Metadata:true",
        "http://169.254.169.254/metadata/identity/oauth2/token?api-version=2018-02-01"
        "&resource=https%3A%2F%2Fmanagement.azure.com%2F",
    )  # fmt: skip
    assert token.returncode == 0 and '"access_token"' in token.stdout, token.stdout
    fault = server.control("POST", "/api/v1/faults", json={"kind": "reset", "vm": "web-0"})
    assert fault.status_code in (200, 201), fault.text
    try:
        path = "/metadata/scheduledevents?api-version=2020-07-01"
        curl = ["curl", "-sS", "-H", "Metadata:true", f"http://169.254.169.254{path}"]
        reset = vmexec.run("web-0", *curl)
        direct = subprocess.run(
            [*curl[:-1], "--interface", vm_address(server, "web-0"),
             f"{server.imds_url}{path}"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert reset.returncode == direct.returncode != 0, (reset.stderr, direct.stderr)
        assert "reset" in reset.stderr.lower() or "empty reply" in reset.stderr.lower()
        other = vmexec.run("web-1", *curl)  # the fault is web-0's only
        assert other.returncode == 0, other.stderr
    finally:
        server.control("DELETE", "/api/v1/faults", json={})


def test_nothing_of_the_host_but_forwarded_ports(vmexec: Exec, server: ServerProcess) -> None:
    control = f"http://127.0.0.1:{server.control_port}/healthz"
    shut = vmexec.run("web-0", "curl", "-sS", "--max-time", "10", control)
    assert shut.returncode == 7, shut.stderr  # could not connect: nobody there
    opened = vmexec.run(
        "web-0", "curl", "-sS", control, options=["--forward", str(server.control_port)]
    )
    assert opened.returncode == 0 and '"ok"' in opened.stdout, opened.stderr
    refused = vmexec.run("web-0", "true", options=["--forward", "10.1.2.3:80"])
    assert refused.returncode == 2
    assert "only the host's loopback can be forwarded" in refused.stderr


def test_the_environment_exit_status_and_signals_are_commands(
    vmexec: Exec, server: ServerProcess
) -> None:
    env = {"FOREWARN_IMDS_URL": "http://127.0.0.1:1", "SCHEDULEDEVENTSIP": "10.0.0.1",
           "KEPT": "yes"}  # fmt: skip
    shown = vmexec.run(
        "web-0", "sh", "-c",
        'echo "${FOREWARN_IMDS_URL-unset} ${SCHEDULEDEVENTSIP-unset} $KEPT"; exit 42', env=env,
    )  # fmt: skip
    assert (shown.returncode, shown.stdout) == (42, "unset unset yes\n"), shown.stderr
    assert vmexec.run("web-0", "sh", "-c", "kill -TERM $$").returncode == 128 + 15
    assert vmexec.run("web-0", "no-such-program").returncode == 127
    for name, code in (("TERM", 3), ("INT", 4)):
        trap = vmexec.start(
            "web-0", "sh", "-c",
            f'trap "echo got {name}; exit {code}" {name}; echo ready; sleep 60 & wait',
        )  # fmt: skip
        assert trap.stdout is not None
        assert trap.stdout.readline() == "ready\n"
        trap.send_signal(getattr(signal, f"SIG{name}"))
        assert trap.wait(timeout=30) == code
        assert trap.stdout.read() == f"got {name}\n"


def test_a_role_instance_finds_the_endpoint_through_dhcp_option_245(
    vmexec: Exec, server: ServerProcess
) -> None:
    before = Path("/proc/self/mountinfo").read_text()
    found = vmexec.run("FrontEnd_IN_0", *vmexec.python(), "-m", "forewarn", "discover")
    assert found.returncode == 0, found.stderr
    assert "http://168.63.129.16" in found.stdout and "DHCP option 245" in found.stdout
    curl = vmexec.run(
        "FrontEnd_IN_0", "curl", "-s", "-H", "Metadata:true",
        "http://168.63.129.16/metadata/instance/compute/name?api-version=2021-02-01&format=text",
    )  # fmt: skip
    assert curl.stdout == "FrontEnd_IN_0"
    vnet = vmexec.run("web-0", *vmexec.python(), "-m", "forewarn", "discover")
    assert "168.63.129.16" not in vnet.stdout  # a VM in a virtual network has no such lease
    assert Path("/proc/self/mountinfo").read_text() == before  # nothing mounted out here
