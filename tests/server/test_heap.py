"""The heap keeper: the fleet's long-lived connections leave the collector's full passes
once they are in, and not for every handful of new ones."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from forewarn.server.heap import FOLLOW_UP_CHECKS, THRESHOLDS, HeapKeeper, freeze_startup_heap
from forewarn.store.writer import WRITER_NICENESS, yield_to_the_loop


@pytest.fixture(autouse=True)
def restore_collector() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_startup_freezes_what_is_alive_and_makes_full_passes_rarer() -> None:
    kept = [{"vm": i} for i in range(10_000)]
    freeze_startup_heap()
    assert gc.get_freeze_count() >= len(kept)
    assert gc.get_threshold() == THRESHOLDS


def test_connections_are_frozen_once_the_fleet_has_settled() -> None:
    open_connections = [0]
    keeper = HeapKeeper(lambda: open_connections[0], minimum=100)
    objects: list[dict[str, list[int]]] = []

    def connect(n: int) -> None:
        objects.extend({"connection": [i]} for i in range(n))  # tracked by gc
        open_connections[0] += n

    seen = keeper.check(0)
    assert keeper.freezes == 0  # nothing connected yet
    connect(5_000)
    seen = keeper.check(seen)  # still pouring in, but from nothing: a doubling
    assert keeper.freezes == 1 and keeper.frozen_at == 5_000
    frozen = gc.get_freeze_count()
    assert frozen >= 5_000
    for _ in range(FOLLOW_UP_CHECKS):  # (what the first polls make: the next test)
        seen = keeper.check(seen)
    freezes = keeper.freezes
    connect(3_000)
    seen = keeper.check(seen)  # growing fast, not doubled yet
    assert keeper.freezes == freezes
    seen = keeper.check(seen)  # settled: the new ones are frozen too
    assert keeper.freezes == freezes + 1 and keeper.frozen_at == 8_000
    assert gc.get_freeze_count() >= frozen + 3_000
    for _ in range(FOLLOW_UP_CHECKS):
        seen = keeper.check(seen)
    freezes = keeper.freezes
    connect(50)
    keeper.check(seen)  # a handful more is not worth a freeze
    assert keeper.freezes == freezes


def test_the_writer_thread_runs_below_the_event_loop() -> None:
    import os

    seen: list[int] = []

    def writer() -> None:
        yield_to_the_loop()
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    thread = threading.Thread(target=writer)
    thread.start()
    thread.join()
    assert seen == [min(19, os.getpriority(os.PRIO_PROCESS, 0) + WRITER_NICENESS)]
    assert os.getpriority(os.PRIO_PROCESS, 0) < seen[0]  # the caller is untouched


def test_what_the_first_polls_make_is_frozen_at_the_looks_that_follow() -> None:
    open_connections = [0]
    keeper = HeapKeeper(lambda: open_connections[0], minimum=100)
    objects: list[dict[str, list[int]]] = []
    objects.extend({"connection": [i]} for i in range(5_000))
    open_connections[0] = 5_000
    seen = keeper.check(0)
    assert keeper.freezes == 1
    for look in range(FOLLOW_UP_CHECKS):  # the first polls: readers, tickets, tracks
        frozen = gc.get_freeze_count()
        objects.extend({"first poll": [look, i]} for i in range(1_000))
        seen = keeper.check(seen)
        assert keeper.freezes == 2 + look and gc.get_freeze_count() >= frozen + 1_000
    for _ in range(3 * FOLLOW_UP_CHECKS):
        seen = keeper.check(seen)
    assert keeper.freezes == 1 + FOLLOW_UP_CHECKS  # then only new connections freeze again
