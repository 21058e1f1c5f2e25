"""What the dashboard's hub hands each open stream: a change per published change, a
fresh start after a reload, only what moved in a tick, and an end when the server stops."""

from __future__ import annotations

import json

from forewarn.control.dashboard import Hub
from forewarn.control.dashboard.hub import QUEUE_LIMIT, RELOAD
from forewarn.fabric import Clock, Fabric, OperationRequest
from forewarn.fleet import build_topology, demo_fleet
from forewarn.store import SQLiteStore
from tests.support.fabrics import T0, make_fabric


def _decode(message: bytes | None) -> tuple[str, dict[str, object]]:
    assert message is not None and message is not RELOAD
    head, _, data = message.decode().partition("\ndata: ")
    return head.removeprefix("event: "), json.loads(data)


async def test_each_published_change_reaches_every_stream_once() -> None:
    fabric = make_fabric()
    hub = Hub(fabric)
    first, second = hub.subscribe(), hub.subscribe()
    op = fabric.submit(OperationRequest(kind="user-reboot", vms=("web-0",)))
    for queue in (first, second):
        kind, change = _decode(queue.get_nowait())
        assert kind == "change"
        assert [e["id"] for e in change["events"]] == list(op.event_ids)  # type: ignore[index]
        assert queue.empty()
    hub.unsubscribe(second)
    fabric.note_request(fabric.topology.vms["web-1"])  # bookkeeping only: nothing to show
    fabric.approve_event(op.event_ids[0])
    kind, change = _decode(first.get_nowait())
    assert change["events"][0]["status"] == "Started"  # type: ignore[index]
    assert second.empty()
    hub.close()


async def test_a_reload_starts_every_stream_over() -> None:
    store = SQLiteStore(":memory:")
    fabric = Fabric(build_topology(demo_fleet()), store, Clock.virtual(start=T0))
    hub = Hub(fabric)
    queue = hub.subscribe()
    fabric.reload(store.load())  # what a follower does after missing changes
    assert queue.get_nowait() is RELOAD
    hub.close()


async def test_a_stream_that_falls_behind_is_ended_not_the_server() -> None:
    fabric = make_fabric()
    hub = Hub(fabric)
    slow, fast = hub.subscribe(), hub.subscribe()
    for _ in range(QUEUE_LIMIT):
        slow.put_nowait(b"unread")
    fabric.submit(OperationRequest(kind="user-reboot", vms=("web-0",)))
    assert slow.get_nowait() is None  # its stream ends; the browser reconnects
    assert _decode(fast.get_nowait())[0] == "change"
    hub.close()
    assert fast.get_nowait() is None and hub.closed


async def test_a_tick_carries_only_what_moved() -> None:
    fabric = make_fabric()
    hub = Hub(fabric)
    assert hub.tick_message()["polls"] == {}
    fabric.note_request(fabric.topology.vms["web-0"])
    tick = hub.tick_message()
    assert list(tick["polls"]) == ["web-0"] and tick["status"] == {}
    assert hub.tick_message()["polls"] == {}  # nothing new
    fabric.submit(OperationRequest(kind="hardware-failure", vms=("web-3",)))
    assert hub.tick_message()["status"] == {"web-3": "redeploying"}
    assert hub.tick_message()["status"] == {}
    fabric.advance(3600)  # the redeploy is over
    assert hub.tick_message()["status"] == {"web-3": "running"}
