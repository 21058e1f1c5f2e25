"""How reactions are recorded: never a write per poll, durable across a restart, merged
across processes, in databases made before reaction tracking existed."""

from __future__ import annotations

import asyncio
import copy
import sqlite3
from pathlib import Path

import pytest

from forewarn.fabric import Clock, Fabric, FabricConfig, StoreUnavailable
from forewarn.fleet import build_topology, load_fleet_file
from forewarn.rehearsal import ReactionData
from forewarn.store import SQLiteStore
from tests.rehearsal.conftest import NEWEST, Rehearsal, vm_verdict
from tests.rehearsal.fleet_scale import THOUSAND
from tests.support.fabrics import T0, make_fabric


class CountingStore(SQLiteStore):
    """A real SQLite store that counts the reaction batches written to it."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self.batches: list[ReactionData] = []

    def save_reactions(self, data: ReactionData) -> None:
        self.batches.append(copy.copy(data))  # (the tracker drops its rows once written)
        super().save_reactions(data)


async def test_polls_are_written_in_batches_never_one_by_one(db: Path) -> None:
    store = CountingStore(db)
    rehearsal = Rehearsal(make_fabric(store=store), store)
    op = rehearsal.submit("user-reboot", "web-0")
    (event_id,) = rehearsal.event_ids(op)
    for _ in range(50):
        await rehearsal.poll("web-0")
        await rehearsal.poll("web-1")
    assert store.batches == []  # a hundred polls wrote nothing
    assert store.reactions().vms == []
    await rehearsal.reactions.flush()
    assert len(store.batches) == 1
    seen = {(r.event_id, r.vm): r.first_seen for r in store.reactions().vms}
    assert seen == {(event_id, "web-0"): T0, (event_id, "web-1"): T0}
    await rehearsal.reactions.flush()  # nothing new: no write at all
    assert len(store.batches) == 1
    rehearsal.fabric.close()
    store.close()


async def test_the_flusher_writes_once_a_second_at_most(db: Path) -> None:
    store = CountingStore(db)
    rehearsal = Rehearsal(make_fabric(store=store), store)
    rehearsal.submit("user-reboot", "web-0")
    task = asyncio.create_task(rehearsal.reactions.run(interval=0.05))
    try:
        await rehearsal.poll("web-0")
        for _ in range(200):
            if store.batches:
                break
            await asyncio.sleep(0.02)
        assert len(store.batches) == 1
        for _ in range(20):  # more polls of the same document: nothing more to write
            await rehearsal.poll("web-0")
        await asyncio.sleep(0.3)
        assert len(store.batches) == 1
    finally:
        task.cancel()
    rehearsal.fabric.close()
    store.close()


async def test_the_verdict_survives_a_restart(db: Path) -> None:
    store = SQLiteStore(db)
    rehearsal = Rehearsal(make_fabric(store=store), store)
    await rehearsal.poll("web-0")
    op = rehearsal.submit("user-reboot", "web-0")
    (event_id,) = rehearsal.event_ids(op)
    rehearsal.advance(3)
    await rehearsal.poll("web-0")
    await rehearsal.approve("web-0", event_id)
    before = await rehearsal.report()
    rehearsal.fabric.close()  # writes what is still pending
    store.close()

    store = SQLiteStore(db)
    fabric = make_fabric(store=store)
    fabric.clock.jump(3)  # the virtual clock where it stood
    after = await Rehearsal(fabric, store).report()
    assert after["events"] == before["events"]
    assert vm_verdict(after["events"][0], "web-0")["verdict"] == "approved"
    fabric.close()
    store.close()


async def test_a_kill_loses_at_most_what_was_not_flushed(db: Path) -> None:
    """A flush makes reactions durable at once: a new process reads them back."""
    store = SQLiteStore(db)
    rehearsal = Rehearsal(make_fabric(store=store), store)
    op = rehearsal.submit("user-reboot", "web-0")
    (event_id,) = rehearsal.event_ids(op)
    await rehearsal.poll("web-0")
    await rehearsal.reactions.flush()
    with sqlite3.connect(db) as other:  # another reader, as after a crash
        rows = other.execute("SELECT event_id, vm, first_seen FROM reaction_vms").fetchall()
    assert rows == [(event_id, "web-0", T0)]
    rehearsal.fabric.close()
    store.close()


async def test_a_database_made_before_reaction_tracking_gets_its_tables(db: Path) -> None:
    store = SQLiteStore(db)
    store.close()
    with sqlite3.connect(db) as old:
        for table in ("reaction_events", "reaction_vms", "reaction_polls"):
            old.execute(f"DROP TABLE {table}")
    store = SQLiteStore(db)
    rehearsal = Rehearsal(make_fabric(store=store), store)
    op = rehearsal.submit("user-reboot", "web-0")
    await rehearsal.poll("web-0")
    report = await rehearsal.report()
    assert [e["id"] for e in report["events"]] == rehearsal.event_ids(op)
    rehearsal.fabric.close()
    store.close()


async def test_a_poll_write_covers_only_the_vms_that_polled_since_the_last(db: Path) -> None:
    """Of 1,000 VMs, the write every fifth second covers those that polled since the last
    one, as plain rows (no object per VM), and nothing at all when nobody polled."""
    store = CountingStore(db)
    topology = build_topology(load_fleet_file(THOUSAND))
    fabric = Fabric(topology, store, Clock.virtual(start=T0), FabricConfig(enablement="always"))
    rehearsal = Rehearsal(fabric, store)
    everyone = list(topology.vms)
    assert len(everyone) == 1000
    await asyncio.gather(*(rehearsal.poll(vm) for vm in everyone))
    await rehearsal.reactions.flush()
    assert len(store.batches[-1].poll_rows) == 1000  # the first write: everyone polled
    assert store.batches[-1].polls == []  # rows, never a VmPolls per VM
    written = len(store.batches)

    rehearsal.advance(7)
    movers = everyone[::100]  # 10 of 1,000 poll again
    await asyncio.gather(*(rehearsal.poll(vm) for vm in movers))
    await rehearsal.reactions.flush()
    assert len(store.batches) == written + 1
    rows = store.batches[-1].poll_rows
    assert sorted(row[0] for row in rows) == sorted(movers)
    assert {row[2] for row in rows} == {T0 + 7}  # their new last poll
    assert {row[1] for row in rows} == {T0}  # first polls kept
    assert {row[3] for row in rows} == {NEWEST}

    await rehearsal.reactions.flush()  # nobody polled since: nothing written
    assert len(store.batches) == written + 1
    polls = {p.vm: p for p in store.polls()}
    assert len(polls) == 1000
    assert polls[movers[0]].last_poll == T0 + 7
    assert polls[everyone[1]].last_poll == T0  # the others as written the first time
    fabric.close()
    store.close()


class FailingOnceStore(CountingStore):
    """Refuses its first reaction write, as a store out of reach would."""

    failed = False

    def save_reactions(self, data: ReactionData) -> None:
        if not self.failed:
            self.failed = True
            raise StoreUnavailable("down for a moment")
        super().save_reactions(data)


async def test_polls_of_a_failed_write_are_written_with_the_next(db: Path) -> None:
    store = FailingOnceStore(db)
    rehearsal = Rehearsal(make_fabric(store=store), store)
    await rehearsal.poll("web-0")
    await rehearsal.poll("web-1")
    with pytest.raises(StoreUnavailable):
        await rehearsal.reactions.flush()
    rehearsal.advance(3)
    await rehearsal.poll("web-1")  # newer than the one that failed
    await rehearsal.poll("web-2")
    await rehearsal.reactions.flush()
    last = {row[0]: row[2] for row in store.batches[-1].poll_rows}
    assert last == {"web-0": T0, "web-1": T0 + 3, "web-2": T0 + 3}
    assert {p.vm: p.last_poll for p in store.polls()} == last
    rehearsal.fabric.close()
    store.close()
