"""The fleet benchmark tells a stall in which the server's loop waited for its core."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from bench.loadgen import LoopWaits

SPIN = "import time\nend = time.time() + 30\nwhile time.time() < end: pass\n"


@pytest.fixture
def spinners() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Two busy processes on one CPU (each waits while the other runs) and one asleep."""
    cpu = min(os.sched_getaffinity(0))
    procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(2)]
    procs.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]))
    for proc in procs:
        os.sched_setaffinity(proc.pid, {cpu})
    yield procs
    for proc in procs:
        proc.kill()
        proc.wait()


def test_a_loop_sharing_its_core_is_seen_waiting_and_a_sleeping_one_is_not(
    spinners: list[subprocess.Popen[bytes]],
) -> None:
    busy, _, asleep = spinners
    time.sleep(0.3)  # both spinners under way
    # Either clock: the fleet benchmark's stalls are in wall time, the streams' in monotonic.
    with LoopWaits([busy.pid]) as shared, LoopWaits([asleep.pid], clock=time.monotonic) as idle:
        start, idle_start = time.time(), time.monotonic()
        time.sleep(1.0)
        end, idle_end = time.time(), time.monotonic()
        time.sleep(0.05)
    assert len(shared.samples) > 50  # every few ms
    assert 200 <= shared.waited_ms(start, end) <= 1100  # about half of the second
    assert idle.waited_ms(idle_start, idle_end) < 20
    assert shared.waited_ms(end + 10, end + 20) == 0.0  # no samples there: nothing known


def test_the_longest_wait_of_several_loops_counts(
    spinners: list[subprocess.Popen[bytes]],
) -> None:
    busy, _, asleep = spinners
    time.sleep(0.3)
    with LoopWaits([asleep.pid, busy.pid]) as both:
        start = time.time()
        time.sleep(0.5)
        end = time.time()
        time.sleep(0.05)
    # The busy one's: an idle loop beside it hides nothing.
    assert 100 <= both.waited_ms(start, end) <= 600
