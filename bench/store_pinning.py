"""Hold a local PostgreSQL server's processes on one CPU for the length of a benchmark.

On a 2-core machine the fleet benchmark gives the server one core and its load generator
the other. With ``--store`` the PostgreSQL processes the front-ends write to would
otherwise run wherever the kernel puts them, the generator's core included, and delay its
polls (the runs are then invalid, generator send lag above 2 ms). Pinning the postmaster
and its children to the server's core charges the store to the side that uses it; the
backends forked later inherit the postmaster's CPU set. Every process's previous CPU set is
given back afterwards. Needs the right to change another user's processes (root).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import psycopg


def _parent(pid: int) -> int:
    """The parent's pid, from ``/proc/PID/stat`` (the field after the command's ``)``)."""
    stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    return int(stat.rpartition(")")[2].split()[1])


def _visible(pid: int) -> bool:
    """Whether ``pid`` is a process this one can see."""
    return pid > 0 and Path(f"/proc/{pid}").exists()


def _children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                if _parent(int(entry.name)) == parent:
                    found.append(int(entry.name))
    return found


def postgres_pids(admin_url: str) -> list[int]:
    """The postmaster serving ``admin_url`` and its children, the postmaster first, or
    nothing when that server is not a process of this machine."""
    with psycopg.connect(admin_url, autocommit=True) as admin:
        row = admin.execute("SELECT pg_backend_pid()").fetchone()
        backend = int(row[0]) if row else 0
        if not _visible(backend):  # another host or another PID namespace
            return []
        postmaster = _parent(backend)
    return [postmaster, *_children(postmaster)]


@contextlib.contextmanager
def postgres_pinned(admin_url: str, cpu: int) -> Iterator[list[int]]:
    """Run the local PostgreSQL server of ``admin_url`` on ``cpu`` inside the block; yields
    the pids pinned (empty when the server is not local, and then nothing changes)."""
    before: dict[int, set[int]] = {}
    try:
        for pid in postgres_pids(admin_url):
            with contextlib.suppress(ProcessLookupError):
                before[pid] = os.sched_getaffinity(pid)
                os.sched_setaffinity(pid, {cpu})
        yield list(before)
    finally:
        # the backends forked inside the block inherited the pin: give them back too
        postmaster = next(iter(before), None)
        if postmaster is not None:
            for pid in set(before) | set(_children(postmaster)):
                with contextlib.suppress(ProcessLookupError, OSError):
                    os.sched_setaffinity(pid, before.get(pid, before[postmaster]))
