"""Late timers fire before any change, and virtual time moves within bounds."""

from __future__ import annotations

import pytest

from forewarn.contract import EventStatus
from forewarn.fabric import Clock, ClockError, Fabric, InvalidTransition
from forewarn.store import SQLiteStore
from tests.support.fabrics import MINUTE, T0, history_kinds, make_fabric, only_event, submit


class FakeTime:
    """A wall clock the test moves, for a real-rate Clock whose timers nobody ran."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def late_fabric() -> tuple[FakeTime, Fabric]:
    source = FakeTime()
    fabric = make_fabric(clock=Clock(rate=1.0, source=source), enablement="always")
    return source, fabric


def test_cancel_after_not_before_finds_the_event_already_started() -> None:
    source, fabric = late_fabric()
    op = submit(fabric, "user-reboot", "web-0")
    event = only_event(fabric, op)
    source.now = T0 + 16 * MINUTE  # past NotBefore; no scheduler ran
    with pytest.raises(InvalidTransition):
        fabric.cancel_event(event.id)
    assert fabric.event(event.id).status is EventStatus.STARTED
    started = fabric.history(event_id=event.id)[-1]
    assert (started.kind, started.at, started.detail) == (
        "event.started",
        T0 + 15 * MINUTE,
        {"reason": "not_before"},
    )


def test_a_late_approval_does_not_move_the_start() -> None:
    source, fabric = late_fabric()
    op = submit(fabric, "user-reboot", "web-0")
    event = only_event(fabric, op)
    source.now = T0 + 16 * MINUTE
    vm = fabric.topology.vms["web-3"]
    fabric.approve(vm, [event.id])
    assert fabric.operation(op.id).started_at == T0 + 15 * MINUTE
    assert "event.approved" not in history_kinds(fabric)


@pytest.mark.parametrize("seconds", [1e12, 11 * 365.25 * 86400])
def test_advance_refuses_absurd_jumps_and_saves_nothing(seconds: float) -> None:
    store = SQLiteStore(":memory:")
    fabric = make_fabric(store=store, clock=Clock.virtual(start=T0), enablement="on-first-request")
    fabric.advance(60)
    with pytest.raises(ClockError, match="at most"):
        fabric.advance(seconds)
    assert fabric.clock.now() == T0 + 60
    assert store.clock_position() == T0 + 60


def test_the_clock_never_passes_the_year_9999() -> None:
    clock = Clock.virtual(start=253402300799.0 - 10)
    with pytest.raises(ClockError, match="9999"):
        clock.jump(20)
    assert clock.now() == 253402300799.0 - 10
