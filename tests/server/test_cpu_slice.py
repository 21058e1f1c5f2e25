"""The event loop's CPU slice (``cpu_slice.py``): what the kernel reports for the thread
that asked, for the threads it starts, for a nice or realtime thread, and for a real
``forewarn serve``'s loop."""

from __future__ import annotations

import os
import platform
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from forewarn.server.cpu_slice import request_slice
from tests.support.serverproc import ServerProcess

T = TypeVar("T")


def kernel_slice(task: str = "thread-self") -> int:
    """``se.slice`` (ns) of a task, as the scheduler reports it."""
    for line in Path(f"/proc/{task}/sched").read_text().splitlines():
        if line.startswith("se.slice "):
            return int(line.split(":")[1])
    raise AssertionError(f"no se.slice for {task}")


def in_a_thread(work: Callable[[], T]) -> T:
    """``work``'s result, run in a thread of its own (the test runner's keep theirs); what
    it raises is raised here."""
    out: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            out.append(work())
        except BaseException as exc:  # (re-raised in the caller's thread)
            failed.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return out[0]


def _kernel_reports_slices() -> bool:
    """Linux 6.12+ (custom slices) that shows a task's ``se.slice``: decided without the
    code under test, so that a broken ``request_slice`` fails here rather than skips."""
    if sys.platform != "linux":
        return False
    release = re.match(r"(\d+)\.(\d+)", platform.release())
    if release is None or (int(release[1]), int(release[2])) < (6, 12):
        return False
    sched = Path("/proc/thread-self/sched")
    return sched.exists() and "se.slice " in sched.read_text()


needs_custom_slices = pytest.mark.skipif(
    not _kernel_reports_slices(), reason="needs Linux 6.12+ showing se.slice"
)


@needs_custom_slices
def test_the_thread_that_asks_gets_the_slice_and_its_new_threads_inherit_it() -> None:
    before = kernel_slice()

    def ask() -> tuple[str | None, int, int]:
        refused = request_slice(0.0003)
        return refused, kernel_slice(), in_a_thread(kernel_slice)

    refused, own, child = in_a_thread(ask)
    assert refused is None
    assert (own, child) == (300_000, 300_000)
    assert kernel_slice() == before  # the thread that started it kept its own


@needs_custom_slices
def test_a_nice_thread_keeps_its_nice_value() -> None:
    nicer = min(19, os.getpriority(os.PRIO_PROCESS, 0) + 1)  # (raising it needs no right)

    def ask() -> tuple[str | None, int, int]:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, nicer)
        refused = request_slice(0.0005)
        return refused, os.getpriority(os.PRIO_PROCESS, tid), kernel_slice()

    assert in_a_thread(ask) == (None, nicer, 500_000)


@pytest.mark.skipif(sys.platform != "linux", reason="Linux scheduling policies")
def test_a_realtime_thread_is_left_as_it_was() -> None:
    def ask() -> tuple[str | None, int, int] | None:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        except PermissionError:
            return None  # (no CAP_SYS_NICE, or no realtime budget in this cgroup)
        refused = request_slice(0.0005)
        return refused, os.sched_getscheduler(0), os.sched_getparam(0).sched_priority

    asked = in_a_thread(ask)
    if asked is None:
        pytest.skip("this process may not make a thread realtime")
    refused, policy, priority = asked
    assert refused == f"the thread's policy ({os.SCHED_FIFO}) is not the normal scheduler's: kept"
    assert (policy, priority) == (os.SCHED_FIFO, 1)


def test_a_slice_out_of_the_kernels_range_is_refused_before_any_call() -> None:
    """The kernel would clamp it and the thread would change: nothing is asked."""
    asked = in_a_thread(lambda: (request_slice(0.00005), request_slice(0.2)))
    assert asked == ("a slice is 0.1-100 ms, not 0.05", "a slice is 0.1-100 ms, not 200")


@needs_custom_slices
@pytest.mark.parametrize(("flags", "expected"), [((), 100_000), (("--loop-slice", "0.4"), 400_000)])
def test_a_server_loop_runs_on_the_slice_it_was_given(
    tmp_path: Path, flags: tuple[str, ...], expected: int
) -> None:
    server = ServerProcess(tmp_path / "state.db", ["--clock", "virtual", *flags]).start()
    try:
        assert server.proc is not None
        pid = server.proc.pid
        assert kernel_slice(f"{pid}/task/{pid}") == expected  # the main thread: the loop
    finally:
        server.stop()


@needs_custom_slices
def test_loop_slice_0_leaves_the_kernels_default(tmp_path: Path) -> None:
    default = in_a_thread(kernel_slice)
    server = ServerProcess(tmp_path / "state.db", ["--loop-slice", "0"]).start()
    try:
        assert server.proc is not None
        pid = server.proc.pid
        assert kernel_slice(f"{pid}/task/{pid}") == default
    finally:
        server.stop()
