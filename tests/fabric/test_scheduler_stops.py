"""The scheduler ends when told to, whenever in its loop the word comes.

A leader stepping down cancelled its scheduler and waited for it. On Python 3.11,
``asyncio.wait_for`` returned its result and dropped a cancellation that arrived in the
loop turns between its awaitable finishing and the waiting task running again (fixed in
3.12); the scheduler, woken by every change of the fabric, was often there, so the
cancellation was lost, the step-down waited for ever and the timers kept firing.
"""

from __future__ import annotations

import asyncio

import pytest

from forewarn.fabric import Clock, OperationRequest, Scheduler
from tests.support.fabrics import T0, make_fabric


@pytest.mark.parametrize("turns", range(6))
async def test_a_cancellation_right_after_a_change_woke_the_scheduler_ends_it(turns: int) -> None:
    fabric = make_fabric(clock=Clock.real())  # (a frozen clock: no time-out to wait with)
    scheduler = Scheduler(fabric, fabric.clock)
    fabric.submit(OperationRequest(kind="user-reboot", vms=("web-0",)))  # its NotBefore:
    task = asyncio.create_task(scheduler.run())  # the scheduler waits with a time-out
    for _ in range(3):
        await asyncio.sleep(0)
    fabric.submit(OperationRequest(kind="user-reboot", vms=("web-1",)))  # wakes it
    for _ in range(turns):
        await asyncio.sleep(0)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=2.0)
    assert done, f"the cancellation {turns} loop turns after a wake-up was lost"
    assert task.cancelled()


async def test_stop_ends_the_scheduler_without_a_cancellation() -> None:
    fabric = make_fabric(clock=Clock.virtual(start=T0))
    scheduler = Scheduler(fabric, fabric.clock)
    task = asyncio.create_task(scheduler.run())
    await asyncio.sleep(0)
    fabric.submit(OperationRequest(kind="user-reboot", vms=("web-0",)))
    scheduler.stop()
    await asyncio.wait_for(task, 2.0)  # returned by itself
    fabric.clock.jump(3600.0)  # its notice long over: the scheduler fires it no more
    await asyncio.sleep(0.05)
    due = fabric.next_due()
    assert due is not None and due < fabric.clock.now()


async def test_a_later_run_ends_an_earlier_one() -> None:
    fabric = make_fabric(clock=Clock.virtual(start=T0))
    scheduler = Scheduler(fabric, fabric.clock)
    first = asyncio.create_task(scheduler.run())
    await asyncio.sleep(0)
    second = asyncio.create_task(scheduler.run())
    await asyncio.wait_for(first, 2.0)
    assert not second.done()
    scheduler.stop()
    await asyncio.wait_for(second, 2.0)
