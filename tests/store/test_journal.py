"""The threaded journal: group commit off the event loop, visible only once durable.

The writer thread is held at a gate (a real SQLite store that waits before each write) so
the tests can look at the server while a write is under way.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from forewarn.fabric import Changes, Clock, Fabric, FabricConfig, StoreUnavailable
from forewarn.fleet import build_topology, demo_fleet
from forewarn.imds import Endpoint, ImdsSettings
from forewarn.imds.messages import Request
from forewarn.store import SQLiteStore, ThreadedJournal
from tests.support.fabrics import T0, submit
from tests.support.faults import small_disk


class GatedStore(SQLiteStore):
    """A SQLite store whose writes wait until the test opens the gate."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self.gate = threading.Event()
        self.gate.set()
        self.writing = threading.Event()
        self.groups: list[int] = []

    def apply_all(self, batch: Sequence[Changes]) -> None:
        self.writing.set()
        self.gate.wait(timeout=30)
        self.groups.append(len(batch))
        super().apply_all(batch)


def _fabric(store: SQLiteStore) -> tuple[Fabric, ThreadedJournal]:
    journal = ThreadedJournal(store)
    config = FabricConfig(enablement="always")
    topology = build_topology(demo_fleet())
    return Fabric(topology, store, Clock.virtual(start=T0), config, journal=journal), journal


def _on_disk(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return [r[0] for r in db.execute("SELECT id FROM operations ORDER BY rowid")]


async def _until(predicate: object, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():  # type: ignore[operator]
            await asyncio.sleep(0.005)


async def test_changes_are_visible_only_once_durable(tmp_path: Path) -> None:
    store = GatedStore(tmp_path / "j.db")
    fabric, _ = _fabric(store)
    store.gate.clear()
    before = fabric.view("web")
    op = submit(fabric, "user-reboot", "web-0")
    await asyncio.to_thread(store.writing.wait, 10)
    # Written-before-visible: while the write is held, readers see the old state.
    assert fabric.view("web") == before
    assert [o.id for o in fabric.operations()] == []
    assert fabric.writes_in_flight() == 1
    store.gate.set()
    await fabric.durable()
    after = fabric.view("web")
    assert after.incarnation == before.incarnation + 1
    assert [e.resources for e in after.events] == [("web-0",)]
    assert [o.id for o in fabric.operations()] == [op.id] == _on_disk(tmp_path / "j.db")
    fabric.close()
    store.close()


async def test_many_changes_share_one_write(tmp_path: Path) -> None:
    store = GatedStore(tmp_path / "g.db")
    fabric, journal = _fabric(store)
    store.gate.clear()
    first = submit(fabric, "user-reboot", "web-0")
    await asyncio.to_thread(store.writing.wait, 10)  # the writer holds the first change
    names = ["web-1", "web-2", "web-3", "web-4", "web-5", "jumpbox", "FrontEnd_IN_0"]
    rest = [submit(fabric, "user-reboot", n) for n in names]
    store.gate.set()
    await fabric.durable()
    assert store.groups == [1, len(names)]  # group commit: one transaction for the rest
    assert journal.commits_written == 1 + len(names)
    assert _on_disk(tmp_path / "g.db") == [first.id, *(op.id for op in rest)]
    fabric.close()
    store.close()


async def test_a_failed_write_rolls_back_everything_built_on_it() -> None:
    with small_disk() as disk:
        store = GatedStore(disk.root / "f.db")
        fabric, _ = _fabric(store)
        submit(fabric, "user-reboot", "web-0")
        await fabric.durable()
        before = (fabric.view("web"), fabric.operations())
        store.gate.clear()
        submit(fabric, "user-reboot", "web-1")
        await asyncio.to_thread(store.writing.wait, 10)
        submit(fabric, "user-reboot", "web-2")  # built on the change being written
        disk.fill()
        store.gate.set()
        with pytest.raises(StoreUnavailable, match="full"):
            await fabric.durable()
        assert (fabric.view("web"), fabric.operations()) == before
        assert "full" in str(fabric.store_error())
        disk.free()
        fabric.clock.jump(2)
        fabric.probe_store()
        await _until(lambda: fabric.store_error() is None)
        # The working state was rolled back too: web-1 has no operation in progress.
        again = submit(fabric, "user-reboot", "web-1")
        await fabric.durable()
        assert [o.id for o in fabric.operations()][-1] == again.id
        fabric.close()
        store.close()


async def test_an_approval_is_answered_once_durable_while_reads_go_on(tmp_path: Path) -> None:
    store = GatedStore(tmp_path / "a.db")
    fabric, _ = _fabric(store)
    endpoint = Endpoint(fabric, ImdsSettings(rate_limit=None))
    submit(fabric, "user-reboot", "web-0")
    await fabric.durable()
    vm = fabric.topology.vm("web-1")
    event_id = fabric.view("web").events[0].event_id

    def request(method: str, body: bytes = b"") -> Request:
        return Request(
            method=method,
            path="/metadata/scheduledevents",
            query=b"api-version=2020-07-01",
            headers=[(b"metadata", b"true")],
            client=vm.address,
            local_port=None,
            body=body,
        )

    store.gate.clear()
    body = b'{"StartRequests":[{"EventId":"%s"}]}' % event_id.encode()
    post = endpoint.handle(request("POST", body))
    assert post.wait is not None  # not answered yet: the approval is being written
    waiting = asyncio.ensure_future(post.wait)
    await asyncio.to_thread(store.writing.wait, 10)
    get = endpoint.handle(request("GET"))  # served at once from the last committed view
    assert get.status == 200 and get.wait is None
    assert b'"EventStatus":"Scheduled"' in get.body
    await asyncio.sleep(0.05)
    assert not waiting.done()
    store.gate.set()
    answer = await asyncio.wait_for(waiting, 10)
    assert (answer.status, answer.body) == (200, b"")
    assert fabric.view("web").events[0].status.value == "Started"
    fabric.close()
    store.close()
