"""A dashboard stream written straight to its connection (a real loopback one): its
snapshot first, what was published meanwhile after it, a fresh snapshot on a reload, and
an end once it is too far behind."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from forewarn.control.dashboard import wire
from forewarn.control.dashboard.hub import RELOAD, Hub, sse
from forewarn.control.dashboard.wire import RETRY, WireStream
from forewarn.fabric import OperationRequest
from tests.support.fabrics import make_fabric

Connection = tuple[asyncio.StreamReader, asyncio.WriteTransport]


@pytest.fixture
async def connection() -> AsyncIterator[Connection]:
    """A loopback connection: the client's reader, the server side's transport."""
    accepted: asyncio.Future[asyncio.StreamWriter] = asyncio.get_running_loop().create_future()
    server = await asyncio.start_server(lambda r, w: accepted.set_result(w), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    theirs = await accepted
    yield reader, theirs.transport  # type: ignore[misc]
    writer.close()
    theirs.transport.abort()
    server.close()


async def _chunk(reader: asyncio.StreamReader) -> bytes:
    """One HTTP/1.1 chunk's data."""
    size = int(await asyncio.wait_for(reader.readline(), 5), 16)
    data = await reader.readexactly(size + 2)
    assert data.endswith(b"\r\n")
    return data[:-2]


class Snapshots:
    """Builds ``snapshot`` events when let through, noting the count each asked at."""

    def __init__(self) -> None:
        self.asked: list[int] = []
        self.go = asyncio.Event()

    async def __call__(self, since: int) -> bytes:
        self.asked.append(since)
        await self.go.wait()
        return sse("snapshot", {"build": len(self.asked)})


async def test_the_snapshot_goes_first_and_what_came_meanwhile_after_it(
    connection: Connection,
) -> None:
    reader, transport = connection
    fabric = make_fabric()
    hub = Hub(fabric)
    snapshots = Snapshots()
    stream = WireStream(transport, hub, snapshots)
    hub.attach(stream)
    stream.start()
    op = fabric.submit(OperationRequest(kind="user-reboot", vms=("web-0",)))
    hub.flush()  # handed to the stream while its snapshot is being built
    await asyncio.sleep(0.05)
    snapshots.go.set()
    first = await _chunk(reader)
    assert first == RETRY + sse("snapshot", {"build": 1})
    change = await _chunk(reader)
    assert change.startswith(b"event: change\n") and op.event_ids[0].encode() in change

    fabric.submit(OperationRequest(kind="user-reboot", vms=("web-1",)))
    hub.flush()  # now written at once, framed as any chunk
    assert (await _chunk(reader)).startswith(b"event: change\n")

    assert stream.deliver(RELOAD)  # the whole state was replaced: a new snapshot
    assert await _chunk(reader) == sse("snapshot", {"build": 2})  # no retry line again
    assert snapshots.asked == [0, hub.published]  # as of the reload
    hub.close()
    assert stream.ended.is_set()


async def test_a_stream_too_far_behind_is_refused_more(
    connection: Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, transport = connection  # the client reads nothing
    monkeypatch.setattr(wire, "BEHIND_BYTES", 64 * 1024)
    hub = Hub(make_fabric())
    snapshots = Snapshots()
    snapshots.go.set()
    stream = WireStream(transport, hub, snapshots)
    hub.attach(stream)
    stream.start()
    await asyncio.sleep(0.05)
    message = b"event: change\ndata: {}\n\n" + b" " * 256 * 1024
    taken = 0
    while stream.deliver(message):  # the kernel's buffers fill, then the process's
        taken += 1
        assert taken < 400, "never behind"
    assert transport.get_write_buffer_size() > 64 * 1024
    hub.close()
