"""A fleet of availability sets after a host update rolled over the whole region, none of
whose VMs polls: every VM had an event (issue 39's reading of a drill at any size)."""

from __future__ import annotations

from pathlib import Path

from tests.support.serverproc import VIRTUAL, ServerProcess

__all__ = ["fleet_of_sets", "rolled_out"]

JSON = {"Content-Type": "application/json"}


def fleet_of_sets(scopes: int, per_scope: int) -> str:
    """``scopes`` availability sets ``as0`` ... of ``per_scope`` VMs, and the standalone
    default VM ``one``."""
    lines = ["default_vm: one", "scopes:", "  - {kind: standalone, name: one}"]
    lines += [
        f"  - {{kind: availability_set, name: as{k}, vms: {per_scope}, update_domains: 5, "
        "fault_domains: 3}"
        for k in range(scopes)
    ]
    return "\n".join(lines) + "\n"


def rolled_out(base: Path, scopes: int, per_scope: int) -> ServerProcess:
    """A started server of that fleet (in ``base``, made here) after a host update over
    the region ran to its end (waves of 50 hosts, the clock a day on at a time)."""
    base.mkdir()
    (base / "fleet.yaml").write_text(fleet_of_sets(scopes, per_scope))
    server = ServerProcess(base / "f.db", [*VIRTUAL, "--fleet", str(base / "fleet.yaml")])
    server.start()
    body = {"kind": "host-update", "region": True, "wave_hosts": 50}
    assert server.control("POST", "/api/v1/operations", headers=JSON, json=body).is_success
    for _ in range(60):
        (rollout,) = server.control("GET", "/api/v1/rollouts").json()
        if rollout["done"]:
            return server
        server.control("POST", "/api/v1/clock/advance", headers=JSON, json={"seconds": 86400})
    server.stop()
    raise AssertionError(f"the region rollout is not done: {rollout}")
