"""A rehearsal in one process: the demo fleet on a virtual clock, its metadata endpoint
(asked as each VM, by source address) and its control API (the report routes).

Everything is observed from outside: what the endpoint answers each VM, and what
``GET /api/v1/reactions`` says about it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from forewarn.control import ControlApp
from forewarn.fabric import Fabric, OperationRecord, OperationRequest
from forewarn.imds import ImdsApp, ImdsSettings
from forewarn.rehearsal import ReactionTracker, track_reactions
from forewarn.store import SQLiteStore
from tests.support.fabrics import make_fabric

SE = "/metadata/scheduledevents"
NEWEST = "2020-07-01"


@dataclass
class Rehearsal:
    """A fleet under rehearsal: poll and approve as VMs, move time, read the verdict."""

    fabric: Fabric
    store: SQLiteStore
    reactions: ReactionTracker = field(init=False)
    imds: ImdsApp = field(init=False)
    control: ControlApp = field(init=False)

    def __post_init__(self) -> None:
        self.reactions = track_reactions(self.fabric, self.store)  # as the server wires it
        self.imds = ImdsApp(self.fabric, ImdsSettings(rate_limit=None), reactions=self.reactions)
        self.control = ControlApp(self.fabric, reactions=self.reactions)

    def _vm_client(self, vm: str) -> httpx.AsyncClient:
        address = self.fabric.topology.vms[vm].address
        transport = httpx.ASGITransport(app=self.imds, client=(address, 40000))
        return httpx.AsyncClient(transport=transport, base_url="http://169.254.169.254")

    async def poll(self, vm: str, version: str = NEWEST, **headers: str) -> dict[str, Any]:
        """GET the document as ``vm``; returns it ({} for a 304)."""
        async with self._vm_client(vm) as client:
            response = await client.get(
                SE, params={"api-version": version}, headers={"Metadata": "true", **headers}
            )
        assert response.status_code in (200, 304), response.text
        return response.json() if response.status_code == 200 else {}

    async def approve(self, vm: str, *event_ids: str) -> None:
        """POST StartRequests as ``vm`` (must be accepted)."""
        body = {"StartRequests": [{"EventId": i} for i in event_ids]}
        async with self._vm_client(vm) as client:
            response = await client.post(
                SE, params={"api-version": NEWEST}, headers={"Metadata": "true"}, json=body
            )
        assert response.status_code == 200, response.text

    def submit(self, kind: str, *vms: str, **fields: Any) -> OperationRecord:
        return self.fabric.submit(OperationRequest(kind=kind, vms=tuple(vms), **fields))

    def advance(self, seconds: float) -> None:
        self.fabric.advance(seconds)

    def event_ids(self, op: OperationRecord) -> list[str]:
        return list(self.fabric.operation(op.id).event_ids)

    async def control_get(self, path: str, **params: Any) -> httpx.Response:
        transport = httpx.ASGITransport(app=self.control.asgi, client=("127.0.0.1", 40001))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8170") as c:
            return await c.get(path, params=params)

    async def report(self, **params: Any) -> dict[str, Any]:
        """The verdict, as ``GET /api/v1/reactions`` answers it."""
        response = await self.control_get("/api/v1/reactions", **params)
        assert response.status_code == 200, response.text
        data: dict[str, Any] = response.json()
        return data

    async def verdict(self, event_id: str, **params: Any) -> dict[str, Any]:
        """One event's verdict."""
        report = await self.report(**params)
        found: dict[str, Any] = next(e for e in report["events"] if e["id"] == event_id)
        return found


def vm_verdict(event: dict[str, Any], vm: str) -> dict[str, Any]:
    found: dict[str, Any] = next(v for v in event["vms"] if v["vm"] == vm)
    return found


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "rehearsal.db"


@pytest.fixture
def rehearsal(db: Path) -> Iterator[Rehearsal]:
    store = SQLiteStore(db)
    fabric = make_fabric(store=store)
    yield Rehearsal(fabric, store)
    fabric.close()
    store.close()
