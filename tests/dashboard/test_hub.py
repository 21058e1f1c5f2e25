"""What the dashboard's hub hands each open stream: a change per published change (in
batches, at most one every BATCH_SECONDS), a fresh start after a reload, only what moved
in a tick (per scope: tests/dashboard/test_fleet_rollup.py), and an end when the server
stops."""

from __future__ import annotations

import asyncio
import json

from forewarn.control.dashboard import Hub
from forewarn.control.dashboard.hub import BATCH_SECONDS, BROADCAST_SLICE, QUEUE_LIMIT, RELOAD
from forewarn.fabric import Clock, Fabric, OperationRequest
from forewarn.fleet import build_topology, demo_fleet
from forewarn.store import SQLiteStore
from tests.support.fabrics import T0, make_fabric


def _decode(message: bytes | None) -> tuple[str, dict[str, object]]:
    [(kind, data)] = _decode_all(message)
    return kind, data


def _decode_all(message: bytes | None) -> list[tuple[str, dict[str, object]]]:
    """The server-sent events of one message (a batch holds several)."""
    assert message is not None and message is not RELOAD
    assert message.endswith(b"\n\n")
    out = []
    for event in message.decode().removesuffix("\n\n").split("\n\n"):
        head, _, data = event.partition("\ndata: ")
        out.append((head.removeprefix("event: "), json.loads(data)))
    return out


async def _next_batch() -> None:
    """Let the hub's batch go out (it waits at most BATCH_SECONDS)."""
    await asyncio.sleep(BATCH_SECONDS * 1.5)


async def test_each_published_change_reaches_every_stream_once() -> None:
    fabric = make_fabric()
    hub = Hub(fabric)
    first, second = hub.subscribe(), hub.subscribe()
    op = fabric.submit(OperationRequest(kind="user-reboot", vms=("web-0",)))
    await _next_batch()
    for queue in (first, second):
        kind, change = _decode(queue.get_nowait())
        assert kind == "change"
        assert [e["id"] for e in change["events"]] == list(op.event_ids)  # type: ignore[index]
        assert queue.empty()
    hub.unsubscribe(second)
    fabric.note_request(fabric.topology.vms["web-1"])  # bookkeeping only: nothing to show
    fabric.approve_event(op.event_ids[0])
    await _next_batch()
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
    await _next_batch()
    assert queue.get_nowait() is RELOAD
    hub.close()


async def test_a_stream_that_falls_behind_is_ended_not_the_server() -> None:
    fabric = make_fabric()
    hub = Hub(fabric)
    slow, fast = hub.subscribe(), hub.subscribe()
    for _ in range(QUEUE_LIMIT):
        slow.put_nowait(b"unread")
    fabric.submit(OperationRequest(kind="user-reboot", vms=("web-0",)))
    await _next_batch()
    assert slow.get_nowait() is None  # its stream ends; the browser reconnects
    assert _decode(fast.get_nowait())[0] == "change"
    hub.close()
    assert fast.get_nowait() is None and hub.closed


async def test_a_tick_carries_only_the_kinds_and_scopes_that_moved() -> None:
    fabric = make_fabric()
    hub = Hub(fabric)
    await hub.tick_message()  # the first says every kind's totals
    assert (await hub.tick_message())["moved"] == []
    fabric.note_request(fabric.topology.vms["web-0"])
    tick = await hub.tick_message()
    assert tick["moved"] == ["web"] and tick["moved_total"] == 1
    assert [(k["kind"], k["polled"]) for k in tick["kinds"]] == [("availability_set", 1)]
    assert (await hub.tick_message())["moved"] == []  # nothing new
    fabric.submit(OperationRequest(kind="hardware-failure", vms=("web-3",)))
    tick = await hub.tick_message()
    assert tick["moved"] == ["web"] and tick["kinds"][0]["states"] == {"redeploying": 1}
    assert tick["kinds"][0]["events"] == 1
    assert (await hub.tick_message())["moved"] == []
    fabric.advance(3600)  # the redeploy is over
    tick = await hub.tick_message()
    assert tick["moved"] == ["web"] and tick["kinds"][0]["states"] == {}
    hub.close()


async def test_changes_close_together_reach_a_stream_in_one_batch() -> None:
    fabric = make_fabric()
    hub = Hub(fabric)
    queue = hub.subscribe()
    loop = asyncio.get_running_loop()
    first = fabric.submit(OperationRequest(kind="user-reboot", vms=("web-0",)))
    alone = await asyncio.wait_for(queue.get(), 5)
    sent = loop.time()
    assert len(_decode_all(alone)) == 1  # one change after a quiet spell: sent at once
    ops = [fabric.submit(OperationRequest(kind="user-reboot", vms=(f"web-{i}",)))
           for i in (1, 2, 3)]  # fmt: skip
    fabric.approve_event(first.event_ids[0])
    batch = _decode_all(await asyncio.wait_for(queue.get(), 5))
    assert loop.time() - sent >= BATCH_SECONDS * 0.8  # a batch after the last one, no sooner
    assert [kind for kind, _ in batch] == ["change"] * 4  # four changes, one message
    ids = [change["events"][0]["id"] for _, change in batch]  # type: ignore[index]
    assert ids == [op.event_ids[0] for op in ops] + [first.event_ids[0]]  # in order
    assert queue.empty()
    hub.close()


async def test_a_reload_drops_the_changes_batched_before_it() -> None:
    store = SQLiteStore(":memory:")
    fabric = Fabric(build_topology(demo_fleet()), store, Clock.virtual(start=T0))
    hub = Hub(fabric)
    queue = hub.subscribe()
    fabric.submit(OperationRequest(kind="user-reboot", vms=("web-0",)))
    fabric.reload(store.load())
    fabric.submit(OperationRequest(kind="user-reboot", vms=("web-1",)))
    await _next_batch()
    assert queue.get_nowait() is RELOAD  # the snapshot has web-0's event
    [(kind, change)] = _decode_all(queue.get_nowait())  # what came after it follows
    assert kind == "change"
    assert change["operations"][0]["vms"] == ["web-1"]  # type: ignore[index]
    assert queue.empty()
    hub.close()


async def test_a_batch_wakes_a_slice_of_the_streams_per_turn_of_the_loop() -> None:
    fabric = make_fabric()
    hub = Hub(fabric)
    queues = [hub.subscribe() for _ in range(BROADCAST_SLICE * 2 + 10)]
    fabric.submit(OperationRequest(kind="user-reboot", vms=("web-0",)))
    hub.flush()  # the batch goes out now: the first slice at once, the rest turn by turn
    assert sum(not q.empty() for q in queues) == BROADCAST_SLICE
    await asyncio.sleep(0)
    assert sum(not q.empty() for q in queues) == BROADCAST_SLICE * 2
    await asyncio.sleep(0)
    assert all(_decode(q.get_nowait())[0] == "change" for q in queues)  # each one, once
    assert all(q.empty() for q in queues)
    hub.close()
