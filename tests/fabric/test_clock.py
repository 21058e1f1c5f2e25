"""The clock: virtual time only moves forward, and only when told to."""

from __future__ import annotations

import math

import pytest

from forewarn.fabric import Clock, ClockError, Fabric
from tests.support.fabrics import T0, observable, submit


class FakeSource:
    """A settable real-time source."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_virtual_clock_is_frozen_until_it_jumps() -> None:
    source = FakeSource()
    clock = Clock.virtual(start=T0, source=source)
    source.now += 500
    assert clock.now() == T0
    assert (clock.rate, clock.is_virtual) == (0.0, True)
    assert clock.jump(90) == T0 + 90
    assert clock.jump(0) == T0 + 90
    assert clock.now() == T0 + 90


@pytest.mark.parametrize("seconds", [-1, -0.001, math.nan, math.inf, -math.inf])
def test_virtual_clock_refuses_to_go_backwards_or_nowhere(seconds: float) -> None:
    clock = Clock.virtual(start=T0)
    with pytest.raises(ClockError, match="only moves forward"):
        clock.jump(seconds)
    assert clock.now() == T0


def test_real_clock_cannot_jump_and_follows_its_source() -> None:
    source = FakeSource()
    clock = Clock.real(source=source)
    assert (clock.rate, clock.is_virtual, clock.now()) == (1.0, False, 1000.0)
    source.now += 2.5
    assert clock.now() == 1002.5
    with pytest.raises(ClockError, match="only a virtual clock"):
        clock.jump(1)
    assert clock.now() == 1002.5


def test_negative_rate_is_refused() -> None:
    with pytest.raises(ClockError, match="rate"):
        Clock(rate=-1)


def test_custom_rate_scales_real_time() -> None:
    source = FakeSource()
    clock = Clock(rate=2.0, start=T0, source=source)
    source.now += 10
    assert clock.now() == T0 + 20
    assert clock.real_seconds_until(T0 + 40) == 10.0


@pytest.mark.parametrize(
    ("rate", "deadline", "expected"),
    [
        (0.0, T0 + 1, math.inf),
        (0.0, T0, 0.0),
        (0.0, T0 - 5, 0.0),
        (1.0, T0 + 7, 7.0),
        (1.0, T0 - 7, 0.0),
        (4.0, T0 + 8, 2.0),
    ],
)
def test_real_seconds_until(rate: float, deadline: float, expected: float) -> None:
    clock = Clock(rate=rate, start=T0, source=FakeSource())
    assert clock.real_seconds_until(deadline) == expected


def test_jump_notifies_listeners() -> None:
    clock = Clock.virtual(start=T0)
    calls: list[float] = []
    clock.on_jump(lambda: calls.append(clock.now()))
    clock.jump(3)
    clock.jump(4)
    assert calls == [T0 + 3, T0 + 7]


def test_fabric_advance_backwards_changes_nothing(fabric: Fabric) -> None:
    submit(fabric, "user-reboot", "web-0")
    before = observable(fabric)
    with pytest.raises(ClockError):
        fabric.advance(-60)
    assert fabric.clock.now() == T0
    assert observable(fabric) == before
