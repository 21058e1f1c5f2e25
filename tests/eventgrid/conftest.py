"""A real ``forewarn serve`` with ARM on a virtual clock at time scale 100 (so Event
Grid's retry schedule of 10 s, 30 s, 1 min... takes 0.1 s, 0.3 s, 0.6 s...), a fleet with
one scope that publishes and one that does not."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from azure.mgmt.resourcegraph import ResourceGraphClient

from tests.arm.conftest import SUBSCRIPTION, AnyToken, ArmServer, start_arm_server
from tests.eventgrid.webhook import subscription_body

FLEET = f"""
subscription: {SUBSCRIPTION}
resource_group: rg-grid
scopes:
  - kind: standalone
    name: pub
    event_grid: true
  - kind: standalone
    name: pub2
    event_grid: true
  - kind: standalone
    name: quiet
  - kind: availability_set
    name: web
    vms: 2
"""


class GridServer:
    def __init__(self, arm: ArmServer) -> None:
        self.arm = arm
        self.server = arm.server

    def subscribe(self, name: str, url: str, schema: str = "EventGridSchema", **props: Any) -> Any:
        body = subscription_body(name, url, schema, **props)
        return self.server.control("POST", "/api/v1/eventgrid/subscriptions", json=body)

    def unsubscribe(self, name: str) -> Any:
        """Delete a subscription (a state change: JSON, as the control API requires)."""
        return self.server.control("DELETE", f"/api/v1/eventgrid/subscriptions/{name}", json={})

    def trigger(self, kind: str, target: str) -> dict[str, Any]:
        r = self.server.control("POST", "/api/v1/operations", json={"kind": kind, "target": target})
        assert r.status_code in (200, 201), r.text
        out: dict[str, Any] = r.json()
        return out

    def action(self, event_id: str, action: str) -> None:
        r = self.server.control("POST", f"/api/v1/events/{event_id}/{action}", json={})
        assert r.status_code == 200, r.text

    def deliveries(self, name: str | None = None) -> list[dict[str, Any]]:
        query = "" if name is None else f"?subscription={name}"
        out: list[dict[str, Any]] = self.server.control(
            "GET", f"/api/v1/eventgrid/deliveries{query}"
        ).json()
        return out

    def wait_deliveries(
        self, name: str, outcome: str, count: int, timeout: float = 30
    ) -> list[Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = [d for d in self.deliveries(name) if d["outcome"] == outcome]
            if len(got) >= count:
                return got
            time.sleep(0.05)
        raise AssertionError(f"deliveries of {name}: {self.deliveries(name)}")

    def graph(self) -> ResourceGraphClient:
        return ResourceGraphClient(AnyToken(), base_url=self.arm.url, connection_verify=self.arm.ca)


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GridServer]:
    arm = start_arm_server(tmp_path_factory.mktemp("grid"), FLEET, extra=("--time-scale", "100"))
    yield GridServer(arm)
    arm.server.stop()
