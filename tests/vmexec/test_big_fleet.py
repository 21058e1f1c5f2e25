"""``forewarn exec`` in a fleet of 100,000 VMs asks the control API for its one VM, never
the topology: every request it sends passes a recording relay in front of the real
server's control API, which says what was asked."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.serverproc import VIRTUAL, ServerProcess
from tests.vmexec.conftest import Exec, userns_works

SCALE_SET = "aks-big-12345678-vmss"
SIZE = 100_000
FLEET = f"""
hosts: 2000
scopes:
  - kind: scale_set
    name: {SCALE_SET}
    vms: {SIZE - 10}
    update_domains: 5
  - kind: cloud_service
    name: shop
    roles: {{FrontEnd: 10}}
"""
_REQUEST_LINE = re.compile(rb"^([A-Z]+) (\S+) HTTP/1\.[01]\r$", re.MULTILINE)


class RecordingRelay:
    """A TCP relay to ``upstream`` on a free loopback port; ``requests()`` are the request
    lines clients sent through it (method, path)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sent: list[bytes] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            record: list[bytes] = []
            with self.lock:
                self.sent.append(b"")
                index = len(self.sent) - 1

            def up(client: socket.socket = client, server: socket.socket = server,
                   record: list[bytes] = record, index: int = index) -> None:  # fmt: skip
                while data := client.recv(65536):
                    record.append(data)
                    with self.lock:
                        self.sent[index] = b"".join(record)
                    server.sendall(data)
                server.shutdown(socket.SHUT_WR)

            def down(client: socket.socket = client, server: socket.socket = server) -> None:
                while data := server.recv(65536):
                    client.sendall(data)
                client.shutdown(socket.SHUT_WR)

            threading.Thread(target=up, daemon=True).start()
            threading.Thread(target=down, daemon=True).start()

    def requests(self) -> list[tuple[str, str]]:
        with self.lock:
            streams = list(self.sent)
        return [(m.decode(), p.decode()) for s in streams for m, p in _REQUEST_LINE.findall(s)]

    def close(self) -> None:
        self.listener.close()


@pytest.fixture(scope="module")
def big_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    base = tmp_path_factory.mktemp("bigfleet")
    (base / "fleet.yaml").write_text(FLEET)
    proc = ServerProcess(base / "f.db", [*VIRTUAL, "--fleet", str(base / "fleet.yaml")])
    proc.start(timeout=180)
    try:
        yield proc
    finally:
        proc.stop()


@pytest.mark.parametrize("user", ["root", "nobody"])
def test_exec_in_a_100k_vm_fleet_asks_for_its_vm_and_never_the_topology(
    big_server: ServerProcess, shared_dir: Path, user: str
) -> None:
    if user == "nobody" and not userns_works():
        pytest.skip("unprivileged user namespaces are off on this machine")
    last = f"{SCALE_SET}_{SIZE - 11}"  # the scale set's last VM: 99,989 before it
    computer_name = big_server.control("GET", f"/api/v1/vms/{last}").json()["computer_name"]
    relay = RecordingRelay(("127.0.0.1", big_server.control_port))
    try:
        runner = Exec(big_server, user, shared_dir, control_url=f"http://127.0.0.1:{relay.port}")
        ran = runner.run(
            last.upper(), "sh", "-c",
            "hostname; curl -sS -H Metadata:true 'http://169.254.169.254/metadata/instance/"
            "compute/name?api-version=2021-02-01&format=text'",
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout == f"{computer_name}\n{last}"
        assert relay.requests() == [("GET", f"/api/v1/vms/{last.upper()}")]
        unknown = runner.run("nope-1", "true")
        assert unknown.returncode == 1
        assert f"no VM named 'nope-1' (its VMs: {SCALE_SET}_0, {SCALE_SET}_1, " in unknown.stderr
        assert f" and {SIZE - 8} more)" in unknown.stderr
        assert relay.requests()[1:] == [("GET", "/api/v1/vms/nope-1")]
    finally:
        relay.close()
