"""A verdict is graded with the collector held off, and the collector is back after it,
also when grading fails: its young passes over a 10,000-VM verdict's objects held the
event loop 5-11 ms at every report (issue 17)."""

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
