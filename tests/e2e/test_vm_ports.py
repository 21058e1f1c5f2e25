"""Dedicated per-VM ports of a real server: the port, not the source address, is the VM."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx

from tests.support.ports import free_ports
from tests.support.serverproc import ServerProcess


def test_each_vm_port_answers_as_its_vm(
    start_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    base = free_ports(3)  # web-0, web-1, solo
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        f"port_base: {base}\n"
        "scopes:\n"
        "  - {kind: availability_set, name: web, vms: 2}\n"
        "  - {kind: standalone, name: solo}\n",
        encoding="utf-8",
    )
    server = start_server(["--fleet", str(fleet), "--clock", "virtual"])
    assert any("(VM web-1)" in line for line in server.banner)
    names = {}
    with httpx.Client(trust_env=False, timeout=10) as client:
        for offset in range(3):
            response = client.get(
                f"http://127.0.0.1:{base + offset}/metadata/instance/compute/name",
                params={"api-version": "2021-02-01", "format": "text"},
                headers={"Metadata": "true"},
            )
            assert response.status_code == 200
            names[base + offset] = response.text
    assert names == {base: "web-0", base + 1: "web-1", base + 2: "solo"}
