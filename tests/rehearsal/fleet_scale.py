"""A rehearsal of the 1,000-VM example fleet, as the issue's user played it.

Scheduled Events are switched on by a scope's first request (as on Azure). Every VM of
``api`` polls except api-5 and api-10 (update domain 0), every other one approving;
``cache`` never asks, so a rolling reboot of it gives no notice to its 48 VMs. Then a
rolling ``platform-reboot api`` walks its first update domain and a ``host-update`` of
host-7 touches several scopes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from forewarn.fabric import Clock, Fabric, FabricConfig
from forewarn.fleet import build_topology, load_fleet_file
from forewarn.store import SQLiteStore
from tests.rehearsal.conftest import Rehearsal
from tests.support.fabrics import T0

THOUSAND = Path(__file__).resolve().parents[2] / "src/forewarn/fleet/fleets/thousand.yaml"
SILENT = ("api-5", "api-10")


def thousand_rehearsal(db: Path) -> Rehearsal:
    """The 1,000-VM fleet on a virtual clock, Scheduled Events on at first request."""
    store = SQLiteStore(db)
    topology = build_topology(load_fleet_file(THOUSAND))
    config = FabricConfig(enablement="on-first-request")
    return Rehearsal(Fabric(topology, store, Clock.virtual(start=T0), config), store)


async def play(r: Rehearsal) -> dict[str, str]:
    """The rehearsal above; returns which operation id each trigger made."""
    pollers = [f"api-{i}" for i in range(200) if f"api-{i}" not in SILENT]
    await asyncio.gather(*(r.poll(vm) for vm in pollers))  # Scheduled Events on for api
    r.advance(1)
    cache = r.submit("platform-reboot", scope="cache")
    reboot = r.submit("platform-reboot", scope="api")
    r.advance(2)
    documents = await asyncio.gather(*(r.poll(vm) for vm in pollers))
    approvals = []
    for n, (vm, doc) in enumerate(zip(pollers, documents, strict=True)):
        mine = [e["EventId"] for e in doc["Events"] if vm in e["Resources"]]
        if mine and n % 2 == 0:
            approvals.append(r.approve(vm, *mine))
    await asyncio.gather(*approvals)
    for _ in range(4):  # the first update domain reboots and is over; pollers keep polling
        r.advance(5 * 60)
        await asyncio.gather(*(r.poll(vm) for vm in pollers))
    host = r.submit("host-update", host="host-7")
    r.advance(2)
    await asyncio.gather(*(r.poll(vm) for vm in pollers))
    return {"cache": cache.rollout_id or cache.id, "api": reboot.rollout_id or reboot.id,
            "host": host.id}  # fmt: skip
