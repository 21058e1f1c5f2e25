"""A VM's repeated poll leaves nothing behind for the collector's young pass to walk.

State kept per VM and changed at every poll is changed in place: a new tuple per VM per
poll, alive until the VM's next poll, is freed as fast as one is made, so the collector's
young count stays low while thousands of them sit in the young generation, and the pass
that comes at last walks all of them at once. At 10,000 VMs the rate limit's buckets and
the repeated polls' last answers were 20,000 such tuples: a 5-12 ms young pass under
SCHED_FIFO at each rollout batch's start and end, as the new documents were made.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from forewarn.imds import RateLimiter
from forewarn.imds.framing import DateHeader, Encoder
from forewarn.imds.messages import Reply, Request
from forewarn.imds.repeats import Repeat, Repeats

KEYS = [f"vm-{i}" for i in range(500)]


@pytest.fixture
def young_growth() -> Iterator[Callable[[Callable[[], Any]], int]]:
    """How many objects the collector tracks that ``work`` left in the young generation
    (the heap frozen before, no collection meanwhile)."""

    def measure(work: Callable[[], Any]) -> int:
        gc.collect()
        gc.freeze()
        gc.disable()
        before = len(gc.get_objects(0))
        work()
        return len(gc.get_objects(0)) - before

    yield measure
    gc.enable()
    gc.unfreeze()


def test_the_rate_limit_counts_a_request_without_a_new_tracked_object(
    young_growth: Callable[[Callable[[], Any]], int],
) -> None:
    now = [100.0]
    limiter = RateLimiter(5.0, lambda: now[0])
    for key in KEYS:
        limiter.allow(key)

    def polls() -> None:
        for _ in range(3):
            now[0] += 1.0
            for key in KEYS:
                assert limiter.allow(key)

    assert young_growth(polls) < 10


class _Same:
    """An endpoint that answers every ticket with the reply it is given."""

    def __init__(self) -> None:
        self.reply = Reply(200, b"{}")

    def ticket(self, request: Request) -> object:
        return object()

    def again(self, ticket: object) -> Reply:
        return self.reply


def test_a_repeated_poll_keeps_its_last_answer_without_a_new_tracked_object(
    young_growth: Callable[[Callable[[], Any]], int],
) -> None:
    endpoint = _Same()
    date = DateHeader()
    repeats = Repeats(endpoint, Encoder(date))  # type: ignore[arg-type]
    polled = [Repeat(f"GET /{key}".encode(), False) for key in KEYS]
    for repeat in polled:
        repeats.again(repeat, object())

    def polls() -> None:
        for body in (b'{"a":1}', b'{"a":2}', b'{"a":3}'):
            endpoint.reply = Reply(200, body)  # a new document: every VM's answer changes
            for repeat in polled:
                answer = repeats.again(repeat, object())
                assert isinstance(answer, bytes) and answer.endswith(body)

    assert young_growth(polls) < 10
