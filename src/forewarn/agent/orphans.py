"""Handler processes that outlived their agent: find them and end them before a retry.

Each exec handler leads a process group of its own (so a timeout ends its whole tree),
which also means a SIGKILLed agent leaves it running. The agent writes the leader's pid
and its start time (``/proc/PID/stat``, field 22) in the state file when it spawns it;
after a restart, a recorded pid whose start time still matches is the orphan (a reused
pid has another start time), and its group is ended before the handler runs again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

__all__ = ["alive", "end_group", "start_time"]


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:  # not pathlib: it loads urllib.parse
            raw = stat.read()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    return raw[raw.rindex(")") + 2 :].split()


def start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot ("" where /proc is missing)."""
    fields = _stat(pid)
    return fields[19] if fields is not None and len(fields) > 19 else ""


def alive(pid: int, started: str) -> bool:
    """``pid`` is still the process recorded as starting at ``started`` (not a zombie)."""
    fields = _stat(pid)
    if fields is None:
        return False
    if fields[0] == "Z":
        return False
    return not started or (len(fields) > 19 and fields[19] == started)


async def end_group(pid: int, started: str, grace: float) -> None:
    """SIGTERM the group ``pid`` leads, SIGKILL it after ``grace`` s if it lingers."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not alive(pid, started):
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        for _ in range(int(grace / 0.05) + 1):
            if not alive(pid, started):
                return
            await asyncio.sleep(0.05)
