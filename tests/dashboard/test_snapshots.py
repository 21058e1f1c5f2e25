"""A snapshot of the dashboard is built once for every stream that needs one at the same
time (300 streams told to reload at once cost one build), and never from before the
moment a stream asked: a change published in between is in it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from forewarn.control.dashboard import DashboardRoutes
from forewarn.fabric import OperationRequest
from tests.support.fabrics import make_fabric


async def test_streams_asking_at_once_share_one_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    fabric = make_fabric()
    routes = DashboardRoutes(fabric)
    reads: list[dict[str, Any]] = []
    history = fabric.history

    def read_history(**kwargs: Any) -> Any:
        reads.append(kwargs)
        return history(**kwargs)

    monkeypatch.setattr(fabric, "history", read_history)
    since = routes.hub.published
    first = await asyncio.gather(*(routes.snapshot_event(since) for _ in range(300)))
    assert len(reads) == 1  # one build for 300 streams
    assert len(set(first)) == 1 and first[0].startswith(b"event: snapshot\ndata: {")

    op = fabric.submit(OperationRequest(kind="user-reboot", vms=("web-0",)))
    (event_id,) = op.event_ids
    assert event_id.encode() not in first[0]
    after = await routes.snapshot_event(routes.hub.published)  # asked after the change
    assert len(reads) == 2 and event_id.encode() in after  # a new build, with it
    again = await routes.snapshot_event(since)  # asked before the change: that one will do
    assert len(reads) == 2 and again == after
    routes.close()
