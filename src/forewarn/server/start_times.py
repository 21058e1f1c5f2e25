"""How long ``forewarn serve`` took to be ready, said in its banner.

Two figures, because they move for different reasons: the interpreter's start and the
imports (fixed, but noisy on a busy machine: tens of milliseconds from one start to the
next), and what the command did after them (the fleet, the database, the listeners: what
grows with the fleet). A million VMs add a few tenths of a second to the second; that is
only measurable apart from the first (``bench/fleet_startup.py`` reads this line).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["StartTimes", "process_age"]


def process_age() -> float | None:
    """Seconds since this process began (Linux's ``/proc``, to 10 ms; None elsewhere)."""
    try:
        stat = Path("/proc/self/stat").read_text()
        began = int(stat.rpartition(")")[2].split()[19]) / os.sysconf("SC_CLK_TCK")
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - began)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


@dataclass(frozen=True)
class StartTimes:
    """The command's start (``began``, a ``perf_counter``; ``cpu``, the process's CPU
    time then, every thread's) and the process's age then (``before``)."""

    began: float
    cpu: float
    before: float | None

    @classmethod
    def now(cls) -> StartTimes:
        return cls(time.perf_counter(), time.process_time(), process_age())

    def __str__(self) -> str:
        # the CPU time too: what a busy machine inflates least (a neighbour's work only
        # delays the wall clock)
        ready = (f"ready in {time.perf_counter() - self.began:.3f} s, "
                 f"{time.process_time() - self.cpu:.3f} s of CPU")  # fmt: skip
        if self.before is None:
            return ready
        return f"{ready} (after {self.before:.2f} s of interpreter start and imports)"
