"""A fleet past 62,500 VMs served for real: a VM in 127.2.0.0/16 is found by its source
address, before and after a restart that rebuilds the fleet from the database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.serverproc import ServerProcess

NAME = "/metadata/instance/compute/name"


def _name_as(server: ServerProcess, source: str) -> str:
    """The VM name the endpoint answers for a request from ``source``."""
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(transport=transport, timeout=30, trust_env=False) as client:
        response = client.get(
            server.imds_url + NAME,
            params={"api-version": "2021-02-01", "format": "text"},
            headers={"Metadata": "true"},
        )
    assert response.status_code == 200, response.text
    return response.text


@pytest.fixture
def fleet_file(tmp_path: Path) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(
        "default_vm: bench\nscopes:\n  - {kind: standalone, name: bench}\n"
        "  - {kind: scale_set, name: big, vms: 62501, placement_groups: 626}\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def server(tmp_path: Path, fleet_file: Path) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path / "big.db", ["--fleet", str(fleet_file)]).start(timeout=120)
    yield proc
    proc.stop()


def test_vms_past_the_first_slash_16_answer_as_themselves(server: ServerProcess) -> None:
    asks = {"127.1.0.2": "big_0", "127.2.0.1": "big_62499", "127.2.0.2": "big_62500"}
    asks |= {"127.0.0.1": "bench", "127.3.0.1": "bench"}  # nobody's address: the default VM
    assert {source: _name_as(server, source) for source in asks} == asks
    server.stop()
    again = ServerProcess(server.db).start(timeout=120)  # the fleet from the database
    try:
        assert {source: _name_as(again, source) for source in asks} == asks
    finally:
        again.stop()
