"""Fixtures for the control API tests: the demo fleet on a virtual clock, in process."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from forewarn.control import ControlApp
from forewarn.fabric import Fabric
from forewarn.rehearsal import track_reactions
from forewarn.store import SQLiteStore
from tests.support.fabrics import make_fabric

with warnings.catch_warnings():
    # Starlette nudges towards httpx2 on import; the httpx it was installed with is fine.
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

API = "/api/v1"
#: What every state-changing request must carry, a body or not.
JSON = {"Content-Type": "application/json"}

__all__ = ["API", "JSON", "TestClient", "create", "observe", "reported_app"]


def reported_app(**options: Any) -> ControlApp:
    """A control app over a fresh ``make_fabric()`` that serves the rehearsal report (its
    reaction tracker wired as the server wires it)."""
    store = SQLiteStore(":memory:")
    fabric = make_fabric(store=store)
    return ControlApp(fabric, reactions=track_reactions(fabric, store), **options)


def observe(fabric: Fabric) -> tuple[Any, ...]:
    """Everything a request could change: events, operations, rollouts, documents, time."""
    return (
        fabric.events(),
        fabric.operations(),
        fabric.rollouts(),
        {sid: fabric.view(sid) for sid in fabric.topology.scopes},
        len(fabric.history(limit=1_000_000)),
        fabric.clock.now(),
    )


def create(client: httpx.Client, **body: Any) -> dict[str, Any]:
    """POST an operation that must be accepted; returns the operation."""
    response = client.post(f"{API}/operations", json=body)
    assert response.status_code == 201, response.text
    op: dict[str, Any] = response.json()
    return op


@pytest.fixture
def fabric() -> Fabric:
    """The demo fleet at T0 on a frozen clock, every scope enabled."""
    return make_fabric()


@pytest.fixture
def client(fabric: Fabric) -> TestClient:
    """A client of ``ControlApp(fabric)`` (no token)."""
    return TestClient(ControlApp(fabric).asgi)


@pytest.fixture
def submit(client: TestClient) -> Callable[..., dict[str, Any]]:
    """Create an operation through the API: ``submit("user-reboot", "web-0", **extra)``."""

    def run(kind: str, target: str | None = None, **extra: Any) -> dict[str, Any]:
        body = {"kind": kind, **extra}
        if target is not None:
            body["target"] = target
        return create(client, **body)

    return run
