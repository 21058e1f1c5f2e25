"""``GET /api/v1/topology`` and ``forewarn topology --json`` stream a big fleet (issue 39):
the first bytes leave long before the last VM is encoded, the metadata endpoint answers
the VMs meanwhile, and the document is whole (100,000 VMs made from a count)."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.fleet_startup import fleet_yaml
from tests.support.cli import cli_env
from tests.support.serverproc import ServerProcess

VMS = 100_000


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("topology")
    fleet = root / "fleet.yaml"
    fleet.write_text(fleet_yaml(VMS), encoding="utf-8")
    server = ServerProcess(root / "forewarn.db", ["--fleet", str(fleet)]).start()
    yield server
    server.stop()


def test_the_topology_streams_and_the_endpoint_answers_meanwhile(big: ServerProcess) -> None:
    assert big.control("GET", "/api/v1/topology").status_code == 200  # the VM table built
    conn = http.client.HTTPConnection("127.0.0.1", big.control_port, timeout=120)
    began = time.perf_counter()
    conn.request("GET", "/api/v1/topology")
    response = conn.getresponse()
    assert response.status == 200
    first = response.read(64 * 1024)
    first_at = time.perf_counter() - began
    # half-way through the download, a VM's poll is answered (the loop is not held)
    assert big.imds().status_code == 200
    rest = response.read()
    total = time.perf_counter() - began
    conn.close()
    # before: the whole document was built (on the loop) before its first byte left
    assert first_at < 0.25 * total, f"first bytes after {first_at:.2f} s of {total:.2f} s"
    document = json.loads(first + rest)
    assert sum(len(s["vms"]) for s in document["scopes"]) == VMS + 1
    assert document["default_vm"] == "bench"
    assert sum(len(vms) for vms in document["hosts"].values()) == VMS + 1
    vm = document["scopes"][1]["vms"][0]
    assert {"name", "scope", "host", "address", "vm_id", "status"} <= set(vm)


def test_topology_json_prints_the_same_document(big: ServerProcess, tmp_path: Path) -> None:
    out = tmp_path / "topology.json"
    with out.open("wb") as sink:
        subprocess.run(
            [sys.executable, "-m", "forewarn", "--control", big.control_url, "topology",
             "--json"], stdout=sink, check=True, timeout=300, env=cli_env(),
        )  # fmt: skip
    document = json.loads(out.read_bytes())
    assert [s["id"] for s in document["scopes"]][:2] == ["bench", "big/pg0"]
    assert sum(len(s["vms"]) for s in document["scopes"]) == VMS + 1
