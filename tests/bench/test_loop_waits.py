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


def test_the_cpus_steal_time_is_sampled_with_the_waits() -> None:
    """Steal time (the host running something else on the machine's CPU) cannot be made
    here; what is read must be /proc/stat's, for that CPU, at each sample."""
    cpu = min(os.sched_getaffinity(0))
    with LoopWaits([os.getpid()], cpu=cpu) as waits:
        time.sleep(0.2)
    with open("/proc/stat") as stat:
        line = next(row for row in stat if row.startswith(f"cpu{cpu} "))
    now = int(line.split()[8])
    assert len(waits.steals) == len(waits.samples) > 10
    assert waits.steals == sorted(waits.steals)  # a running count
    assert 0 <= now - waits.steals[-1] <= 5


def test_stolen_time_is_counted_over_the_samples_around_a_stall() -> None:
    with LoopWaits([os.getpid()], cpu=min(os.sched_getaffinity(0))) as waits:
        pass
    # Ticks of the kernel's clock (SC_CLK_TCK a second): 3 of them between 1 s and 2 s.
    waits.samples = [(float(t), (0,)) for t in range(5)]
    waits.steals = [7, 7, 10, 10, 10]
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    assert waits.stolen_ms(1.5, 1.8) == 3 * tick_ms  # from the sample before to the one after
    assert waits.stolen_ms(2.5, 3.5) == 0.0
    assert waits.stolen_ms(9.0, 10.0) == 0.0  # no samples there: nothing known
    with LoopWaits([os.getpid()]) as without:  # no CPU given: nothing sampled, nothing said
        time.sleep(0.05)
    assert without.steals == [] and without.stolen_ms(0, time.time() + 1) == 0.0


def test_a_cpu_the_machine_does_not_have_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="/proc/stat has no CPU 4096"):
        LoopWaits([os.getpid()], cpu=4096)
