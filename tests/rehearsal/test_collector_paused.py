"""The tracker's thread grades a verdict and writes poll rows with the collector held off,
and the collector is back after it, also when grading fails: the young passes over a
10,000-VM verdict's objects, and over the poll rows, held the event loop 5-20 ms (issue 17)."""

from __future__ import annotations

import gc
from typing import Any

import pytest

import forewarn.control.rehearsal_routes as routes
from tests.rehearsal.conftest import Rehearsal


@pytest.fixture
def collector_seen(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether the collector was on at each grading (the real grading runs)."""
    seen: list[bool] = []
    real = routes.grade

    def grade(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(routes, "grade", grade)
    return seen


async def test_grading_runs_with_the_collector_off_then_it_is_back(
    rehearsal: Rehearsal, collector_seen: list[bool]
) -> None:
    assert gc.isenabled()
    op = rehearsal.submit("user-reboot", "web-0")
    await rehearsal.poll("web-0")
    report = await rehearsal.report()
    assert [e["id"] for e in report["events"]] == rehearsal.event_ids(op)
    rehearsal.advance(1)  # the clock moved: graded anew, not the verdict kept
    html = await rehearsal.control_get("/api/v1/report")
    assert html.status_code == 200 and "web-0" in html.text
    assert collector_seen == [False, False]
    assert gc.isenabled()


async def test_the_collector_is_back_when_grading_fails(
    rehearsal: Rehearsal, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        assert not gc.isenabled()
        raise RuntimeError("grading failed")

    monkeypatch.setattr(routes, "grade", broken)
    with pytest.raises(RuntimeError, match="grading failed"):
        await rehearsal.control_get("/api/v1/reactions")
    assert gc.isenabled()


async def test_a_collector_turned_off_elsewhere_stays_off(
    rehearsal: Rehearsal, collector_seen: list[bool]
) -> None:
    gc.disable()
    try:
        await rehearsal.report()
        assert collector_seen == [False] and not gc.isenabled()
    finally:
        gc.enable()


async def test_the_poll_rows_are_written_with_the_collector_off(
    rehearsal: Rehearsal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """10,000 rows every five seconds: the young passes over them held the loop 5-20 ms."""
    tracker = rehearsal.reactions
    seen: list[tuple[bool, int]] = []
    real = tracker._save

    def save(data: Any) -> None:
        seen.append((gc.isenabled(), len(data.poll_rows)))
        real(data)

    monkeypatch.setattr(tracker, "_save", save)
    for vm in ("web-0", "web-1", "web-2"):
        await rehearsal.poll(vm)
    await tracker.flush(polls=True)
    assert seen == [(False, 3)]
    assert gc.isenabled()
    assert {p.vm for p in tracker.shared_polls()} >= {"web-0", "web-1", "web-2"}
