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
    shared = LoopWaits([busy.pid])
    idle = LoopWaits([asleep.pid])
    start = time.time()
    time.sleep(1.0)
    end = time.time()
    time.sleep(0.05)
    shared.stop()
    idle.stop()
    assert len(shared.samples) > 50  # every few ms
    assert 200 <= shared.waited_ms(start, end) <= 1100  # about half of the second
    assert idle.waited_ms(start, end) < 20
    assert shared.waited_ms(end + 10, end + 20) == 0.0  # no samples there: nothing known
