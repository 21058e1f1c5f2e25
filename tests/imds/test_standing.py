"""A front-end whose standing lapsed answers no VM from its views until it is confirmed.

A process of a scaled-out fleet that stopped for a while (SIGSTOP, a paused VM, a
partition) wakes up with views that may be older than what other front-ends showed the
VMs meanwhile. Its ``Standing`` lapses a few seconds after the database last vouched for
it; from then on a poll waits for it to be confirmed again, and is a 503 after
``CATCH_UP_SECONDS`` rather than an older document; a leader in that state fires no
timer and writes nothing.
"""

from __future__ import annotations

import asyncio

from forewarn.fabric import Clock, OperationRequest, StoreUnavailable
from forewarn.fabric.standing import Standing
from forewarn.imds import Endpoint, ImdsSettings, Request
from forewarn.imds.endpoint import CATCH_UP_SECONDS
from tests.support.fabrics import T0, make_fabric

WEB_0 = "127.1.0.1"


def _poll() -> Request:
    return Request(
        method="GET", path="/metadata/scheduledevents", query=b"api-version=2020-07-01",
        headers=[(b"metadata", b"true")], client=WEB_0, local_port=None, body=b"",
    )  # fmt: skip


class Moment:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _lapsing() -> tuple[Endpoint, Standing, Moment, list[int]]:
    fabric = make_fabric(clock=Clock.virtual(start=T0))
    moment = Moment()
    lapses: list[int] = []
    fabric.standing = Standing(moment)
    fabric.standing.require(2.5, on_lapse=lambda: lapses.append(1))
    fabric.standing.confirm(moment.now)
    return Endpoint(fabric, ImdsSettings(rate_limit=None)), fabric.standing, moment, lapses


async def test_a_poll_after_a_lapse_waits_for_the_standing_then_gets_the_document() -> None:
    endpoint, standing, moment, lapses = _lapsing()
    assert endpoint.handle(_poll()).status == 200  # confirmed: answered at once
    moment.now += 2.6  # e.g. SIGSTOPped, then SIGCONTed: the poll is the first thing it does
    reply = endpoint.handle(_poll())
    assert reply.wait is not None, "answered from views nobody vouched for"
    assert lapses == [1]  # the cluster is told at once (a leader checks without waiting)
    answer = asyncio.ensure_future(reply.wait)
    await asyncio.sleep(0.1)
    assert not answer.done()
    standing.confirm(moment.now)  # the database vouched for it again
    done = await asyncio.wait_for(answer, 1.0)
    assert done.status == 200
    assert b"DocumentIncarnation" in done.body


async def test_a_poll_is_503_when_the_standing_is_not_confirmed_in_time() -> None:
    endpoint, _, moment, _ = _lapsing()
    moment.now += 10.0
    reply = endpoint.handle(_poll())
    assert reply.wait is not None
    started = asyncio.get_running_loop().time()
    answer = await reply.wait
    assert answer.status == 503
    assert b"cannot vouch" in answer.body
    assert asyncio.get_running_loop().time() - started >= CATCH_UP_SECONDS * 0.9


async def test_a_leader_whose_standing_lapsed_fires_no_timer_and_writes_nothing() -> None:
    fabric = make_fabric(clock=Clock.virtual(start=T0))
    moment = Moment()
    fabric.standing = Standing(moment)
    fabric.standing.require(2.5)
    fabric.standing.confirm(moment.now)
    fabric.submit(OperationRequest(kind="user-reboot", vms=("web-0",)))
    fabric.clock.jump(3600.0)  # its NotBefore passed
    moment.now += 3.0
    assert fabric.run_due() == 0
    try:
        fabric.submit(OperationRequest(kind="user-reboot", vms=("web-1",)))
    except StoreUnavailable as exc:
        assert "may no longer lead" in str(exc)
    else:
        raise AssertionError("a leader whose standing lapsed made a change")
    fabric.standing.confirm(moment.now)
    assert fabric.run_due() >= 1  # (started, and finished: an hour passed)
