"""The event loop's CPU slice (``cpu_slice.py``): what the kernel reports for the thread
that asked, for the threads it starts, for a nice or realtime thread, and for a real
``forewarn serve``'s loop."""

from __future__ import annotations

import os
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


def _custom_slices() -> bool:
    """Whether this kernel takes a thread's own slice (Linux 6.12+, EEVDF)."""
    return in_a_thread(lambda: request_slice(0.0002)) is None


def in_a_thread(work: Callable[[], T]) -> T:
    """``work``'s result, run in a thread of its own (the test runner's keep theirs)."""
    out: list[T] = []
    thread = threading.Thread(target=lambda: out.append(work()))
    thread.start()
    thread.join()
    return out[0]


needs_custom_slices = pytest.mark.skipif(
    not Path("/proc/thread-self/sched").exists() or not _custom_slices(),
    reason="this kernel has no custom slices (Linux 6.12+)",
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
    def ask() -> tuple[str | None, int, int]:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, 7)
        refused = request_slice(0.0005)
        return refused, os.getpriority(os.PRIO_PROCESS, tid), kernel_slice()

    assert in_a_thread(ask) == (None, 7, 500_000)


@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO needs root")
def test_a_realtime_thread_is_left_as_it_was() -> None:
    def ask() -> tuple[str | None, int, int]:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        refused = request_slice(0.0005)
        return refused, os.sched_getscheduler(0), os.sched_getparam(0).sched_priority

    refused, policy, priority = in_a_thread(ask)
    assert refused is not None and "not under the normal scheduler" in refused
    assert (policy, priority) == (os.SCHED_FIFO, 1)


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
