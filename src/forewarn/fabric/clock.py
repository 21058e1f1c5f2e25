"""The one source of time, modelled on trio's MockClock.

A clock has a *rate*: 1 follows the wall clock, 0 is frozen (virtual: it moves only by
``jump``). Everything else in forewarn asks a Clock for the time, so tests choose time
and a restart resumes timers from absolute instants.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from forewarn.fabric.errors import ClockError

__all__ = ["Clock", "monotonic", "wall_time"]

TimeSource = Callable[[], float]

#: The largest single jump of a virtual clock (10 years), and the end of time (9999-12-31).
MAX_JUMP = 10 * 365.25 * 24 * 3600
LATEST_TIME = 253402300799.0


#: Real monotonic seconds, for rate limiting and latency (never for event times). The
#: C function itself, not a wrapper: the endpoint reads it on every request.
monotonic: TimeSource = time.monotonic

#: Real POSIX seconds, for transport concerns such as the HTTP Date header (as above).
wall_time: TimeSource = time.time


class Clock:
    """Virtual time = ``base_virtual + (source() - base_real) * rate``.

    ``source`` is the replaceable real time source (POSIX seconds by default). The server
    uses rate 1 (real) or 0 (virtual); ``--time-scale`` divides durations in the fabric
    instead, so NotBefore always agrees with the wall clock a client reads.
    """

    def __init__(
        self, *, rate: float = 1.0, start: float | None = None, source: TimeSource = time.time
    ) -> None:
        if rate < 0:
            raise ClockError("clock rate must be >= 0")
        self._source = source
        self._rate = rate
        self._base_real = source()
        self._base_virtual = self._base_real if start is None else start
        self._listeners: list[Callable[[], None]] = []
        #: Current time in POSIX seconds, as the platform sees it. The wall clock is its
        #: source itself (read on every request, so not behind a method of its own).
        self.now: TimeSource = source if rate == 1.0 and start is None else self._moved_now

    @classmethod
    def real(cls, source: TimeSource = time.time) -> Clock:
        """The wall clock."""
        return cls(rate=1.0, source=source)

    @classmethod
    def virtual(cls, start: float | None = None, source: TimeSource = time.time) -> Clock:
        """A frozen clock, starting at ``start`` (default: now), moved only by ``jump``."""
        return cls(rate=0.0, start=start, source=source)

    @property
    def rate(self) -> float:
        """1 for real time, 0 for a frozen virtual clock."""
        return self._rate

    @property
    def is_virtual(self) -> bool:
        """True when the clock only moves by ``jump``."""
        return self._rate == 0

    def _moved_now(self) -> float:
        """``now`` of a clock that is not the wall clock (frozen, jumped, other rate)."""
        return self._base_virtual + (self._source() - self._base_real) * self._rate

    def check_jump(self, seconds: float) -> None:
        """Raise ClockError unless ``jump(seconds)`` would be allowed."""
        if not self.is_virtual:
            raise ClockError("only a virtual clock can be advanced (start with --clock virtual)")
        if not math.isfinite(seconds) or seconds < 0:
            raise ClockError(f"a clock only moves forward; cannot advance by {seconds!r} s")
        if seconds > MAX_JUMP:
            raise ClockError(f"advance at most {MAX_JUMP:.0f} s (10 years) at a time")
        if self.now() + seconds >= LATEST_TIME:
            raise ClockError("the clock cannot go past the year 9999")

    def jump(self, seconds: float) -> float:
        """Move a virtual clock forward; refuses to go backwards or to move a real clock."""
        self.check_jump(seconds)
        self._base_virtual += seconds
        for listener in list(self._listeners):
            listener()
        return self.now()

    def real_seconds_until(self, deadline: float) -> float:
        """Real seconds to sleep until ``deadline``; infinite for a frozen clock."""
        remaining = deadline - self.now()
        if remaining <= 0:
            return 0.0
        if self._rate == 0:
            return math.inf
        return remaining / self._rate

    def on_jump(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after every jump (the scheduler wakes on it)."""
        self._listeners.append(listener)
