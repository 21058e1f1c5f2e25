"""A subscriber's queue holds at most 1,000 notices, retries included: the notice being
attempted keeps its place, so when its webhook fails it and 1,000 more came meanwhile,
the 1,000th newcomer is the one dropped (recorded), not a 1,001st waiting. A real webhook
on loopback that holds each request until the test lets it go."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from forewarn.eventgrid.delivery import MAX_PENDING, DeliveryLog, Pending, Subscriber
from forewarn.eventgrid.ledger import Notice
from forewarn.eventgrid.subscriptions import Subscription, SubscriptionSpec
from tests.eventgrid.webhook import Behaviour, Received, webhook


class _Holding:
    """The first notification is held, then failed (500); the others held, then taken."""

    def __init__(self) -> None:
        self.release_first = threading.Event()
        self.release_rest = threading.Event()
        self.behaviour = Behaviour(fail_first=1, before_answer=self._hold)

    def _hold(self, got: Received) -> None:
        first = self.behaviour.notifications()[0] is got
        (self.release_first if first else self.release_rest).wait(30)

    def arrived(self) -> int:
        return len(self.behaviour.notifications())


@contextmanager
def holding_webhook() -> Iterator[tuple[str, _Holding]]:
    hook = _Holding()
    with webhook(hook.behaviour) as (url, _):
        try:
            yield url, hook
        finally:  # let the held requests go before the webhook stops
            hook.release_first.set()
            hook.release_rest.set()


def _notice(i: int) -> Notice:
    return Notice(
        f"id-{i}", f"event-{i}", "scope", "/subscriptions/s/vm", "eastus", "Scheduled",
        "Reboot", ("vm",), None, "", "Platform", 0, 0.0,
    )  # fmt: skip


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30, trust_env=False) as c:
        yield c


async def _until(check: Any) -> None:
    for _ in range(600):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("not reached in 30 s")


async def test_a_retried_notice_keeps_its_place_and_the_queue_never_holds_1001(
    client: httpx.AsyncClient,
) -> None:
    assert MAX_PENDING == 1000
    with holding_webhook() as (url, hook):
        sub = Subscription(SubscriptionSpec("bounded", url), "Succeeded")
        log = DeliveryLog(size=5000)
        subscriber = Subscriber(  # a retry 10 ms later, a time to live of 86 s
            sub, client, log, topic="t", now=lambda: 0.0, time_scale=1000
        )
        subscriber.offer(_notice(0))
        subscriber.start()
        try:
            await _until(lambda: hook.arrived() == 1)  # notice 0 in flight, held
            for i in range(1, MAX_PENDING + 1):
                subscriber.offer(_notice(i))
            assert len(subscriber.queued()) == MAX_PENDING
            dropped = [a for a in log.list(limit=5000) if a.outcome == "dropped"]
            assert [(a.id, a.answer) for a in dropped] == [(f"id-{MAX_PENDING}", "queue full")]
            assert sub.dropped == 1

            hook.release_first.set()  # notice 0 fails: queued again for its retry
            await _until(lambda: any(a.outcome == "retrying" for a in log.list(limit=5000)))
            await _until(lambda: hook.arrived() == 2)  # the next one in flight, held
            waiting = subscriber.queued()
            assert len(waiting) == MAX_PENDING  # was 1,001
            assert "id-0" in {entry.notice.id for entry in waiting}  # the retry kept its place
            assert sub.dropped == 1
        finally:
            hook.release_rest.set()
            await subscriber.close()


async def test_a_queue_restored_past_the_bound_keeps_the_first_offered(
    client: httpx.AsyncClient,
) -> None:
    sub = Subscription(SubscriptionSpec("restored", "http://127.0.0.1:9/hook"), "Succeeded")
    log = DeliveryLog(size=5000)
    subscriber = Subscriber(sub, client, log, topic="t", now=lambda: 0.0, max_pending=3)
    subscriber.restore([Pending(_notice(i), 1, float(10 - i), 1e12) for i in range(5)])
    assert sorted(e.notice.id for e in subscriber.queued()) == ["id-2", "id-3", "id-4"]
    assert sorted(a.id for a in log.list() if a.outcome == "dropped") == ["id-0", "id-1"]
    assert sub.dropped == 2
