"""A leader steps down however its tasks take the cancellation (one process, real PostgreSQL).

The race found behind a frozen leader that never followed again: stepping down cancelled
the leader's tasks and waited for them, and on Python 3.11 the scheduler's
``asyncio.wait_for`` could drop that cancellation (it arrived in the loop turns after its
wait ended), so the wait never ended and the timers kept firing. Here a leader task drops
its first cancellation the same way, and another process takes the lead (a new epoch, as
a follower that deposed a frozen leader does): the leader must stop acting as one at
once, then follow, healthy again within seconds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import psycopg
import pytest
import structlog.testing
from prometheus_client import CollectorRegistry

from forewarn.fabric import Clock, OperationRequest
from forewarn.server.cluster.leadership import Cluster
from forewarn.server.cluster.metrics import ClusterMetrics
from forewarn.store.postgres import PostgresStore
from forewarn.store.postgres_schema import LEADER_LOCK
from tests.scaleout.pg import PgDatabase
from tests.support.fabrics import make_fabric


async def _until(condition: object, timeout: float, what: str) -> float:
    started = time.monotonic()
    while not condition():  # type: ignore[operator]
        if time.monotonic() - started > timeout:
            pytest.fail(f"not {what} within {timeout} s")
        await asyncio.sleep(0.02)
    return time.monotonic() - started


@pytest.fixture
async def cluster(pg: PgDatabase) -> AsyncIterator[Cluster]:
    store = PostgresStore(pg.url)
    fabric = make_fabric(store=store, clock=Clock.real())
    made = Cluster(
        fabric, store, fabric.clock, control_url=None,
        metrics=ClusterMetrics(CollectorRegistry()),
    )  # fmt: skip
    made.start()
    try:
        yield made
    finally:
        await asyncio.wait_for(made.stop(), 30)
        store.close()


async def test_a_leader_steps_down_though_a_task_of_its_drops_the_cancellation(
    cluster: Cluster, pg: PgDatabase
) -> None:
    await _until(lambda: cluster.leading, 30, "leading")
    fabric = cluster.fabric
    fabric.submit(OperationRequest(kind="user-reboot", vms=("web-0",)))  # a timer pending
    dropped: list[str] = []

    async def stubborn() -> None:  # as the scheduler's wait_for did on Python 3.11
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            dropped.append("first cancellation")
        await asyncio.sleep(3600)

    task = asyncio.create_task(stubborn(), name="stubborn")
    cluster._leader_tasks.append(task)
    await asyncio.sleep(0)
    with structlog.testing.capture_logs() as logs, pg.connect() as other:
        other.execute("UPDATE leader SET epoch = epoch + 1, holder = 'another' WHERE id = 1")
        gone = await _until(lambda: not fabric.leading, 3, "stopped leading")
        assert not fabric.standing.current()  # nothing served from the leader's views
        assert fabric.run_due() == 0
        # the other process holds the lock from the moment this one lets it go
        await _until(lambda: _took(other), 10, "the lock freed (the step-down closed the session)")
        back = await _until(cluster.healthy, 5, "following, healthy")
        assert task.done() and dropped
        assert not cluster.leading
        assert fabric.standing.current()  # the views reloaded from the database
    events = [entry["event"] for entry in logs]
    assert "no longer leading the fleet" in events
    assert "following the fleet's leader again" in events
    print(f"stopped leading {gone:.2f} s after the takeover, healthy {back:.2f} s later")


def _took(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    row = conn.execute("SELECT pg_try_advisory_lock(%s)", (LEADER_LOCK,)).fetchone()
    return bool(row and row[0])
