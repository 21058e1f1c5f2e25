"""The event loop's CPU slice: a request is answered when it arrives, not after a neighbour's
slice (Linux 6.12 and later).

Under Linux's normal scheduler (EEVDF), a thread that wakes on a core where another one
runs may wait until the running one has used its slice: 0.7-3 ms by default (by kernel
version and number of CPUs), which is the p99 of a fleet's polls when the server's own
writer or pool thread, a second worker or any other process shares the loop's core. A
thread may ask for a shorter slice (the ``sched_runtime`` of ``sched_setattr`` for a
normal-policy thread, 0.1-100 ms, no privilege needed): the loop then preempts as soon as
a request wakes it. It gets no more CPU than before, only sooner; the threads it starts
from then on inherit the slice, so the server's pools take turns with the loop in short
slices too. Threads under another policy (realtime ones: ``chrt``) are left alone, and so
is a kernel without custom slices (it takes the call and ignores the value: read back to
know). A loaded sched_ext scheduler may ignore the slice although it reads back.
"""

from __future__ import annotations

import os
import platform
import struct
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ctypes

__all__ = ["MAX_SLICE", "MIN_SLICE", "request_slice"]

#: The range the kernel accepts, in seconds (it clamps anything else).
MIN_SLICE = 0.0001
MAX_SLICE = 0.1
#: ``sched_setattr`` and ``sched_getattr`` by 64-bit architecture (glibc wraps them only
#: from 2.41 on, so they are called by number).
_SYSCALLS = {"x86_64": (314, 315), "aarch64": (274, 275), "riscv64": (274, 275)}
#: ``struct sched_attr`` as of Linux 4.13: size, policy, flags, nice, priority, runtime,
#: deadline, period (ns), utilisation clamps.
_ATTR = struct.Struct("=IIQiIQQQII")
_NORMAL_POLICIES = (os.SCHED_OTHER, os.SCHED_BATCH) if hasattr(os, "SCHED_BATCH") else ()
_SCHED_FLAG_RESET_ON_FORK = 0x01


def request_slice(seconds: float) -> str | None:
    """Ask for a ``seconds`` slice for the calling thread; None when the kernel took it,
    else why it did not (the thread is then as it was)."""
    if not MIN_SLICE <= seconds <= MAX_SLICE:
        return f"a slice is {MIN_SLICE * 1000:g}-{MAX_SLICE * 1000:g} ms, not {seconds * 1000:g}"
    import ctypes  # (only here: every command imports the configuration)

    numbers = _SYSCALLS.get(platform.machine()) if sys.platform == "linux" else None
    if numbers is None or ctypes.sizeof(ctypes.c_void_p) != 8:  # (32-bit on 64: others)
        return f"no sched_setattr number known for {sys.platform} {platform.machine()}"
    set_call, get_call = numbers
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        current = _get(libc, get_call)
        if isinstance(current, str):
            return current
        _, policy, flags, nice, _, _, _, _, _, _ = current
        if policy not in _NORMAL_POLICIES:
            return f"the thread's policy ({policy}) is not the normal scheduler's: kept"
        wanted = round(seconds * 1e9)
        # The same policy and nice, only the slice: sched_setattr sets them all.
        attr = _ATTR.pack(_ATTR.size, policy, flags & _SCHED_FLAG_RESET_ON_FORK, nice, 0,
                          wanted, 0, 0, 0, 0)  # fmt: skip
        buffer = ctypes.create_string_buffer(attr, _ATTR.size)
        if libc.syscall(set_call, 0, buffer, 0) != 0:
            return f"sched_setattr: {os.strerror(ctypes.get_errno())}"
        after = _get(libc, get_call)
    except (OSError, AttributeError) as exc:  # no C library to call through
        return f"cannot call sched_setattr: {exc}"
    if isinstance(after, str):
        return after
    if after[5] != wanted:
        return "this kernel has no custom slices (Linux 6.12 and later)"
    return None


def _get(libc: ctypes.CDLL, call: int) -> tuple[int, ...] | str:
    """The calling thread's ``sched_attr``, or why it could not be read."""
    import ctypes

    buffer = ctypes.create_string_buffer(_ATTR.size)
    if libc.syscall(call, 0, buffer, _ATTR.size, 0) != 0:
        return f"sched_getattr: {os.strerror(ctypes.get_errno())}"
    return _ATTR.unpack(buffer.raw)
