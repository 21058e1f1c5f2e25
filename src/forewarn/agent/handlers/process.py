"""Run a child process that dies with its handler.

Each child leads its own process group, so a cancelled handler (timeout, SIGTERM with
``shutdown = "abandon"``) ends the whole tree it started, not only the first process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

__all__ = ["ProcessResult", "run_process", "tail"]

#: Seconds between SIGTERM and SIGKILL when a child must stop.
KILL_GRACE = 2.0


class ProcessResult(NamedTuple):
    """Exit status and captured output of a finished child."""

    returncode: int
    stdout: bytes
    stderr: bytes


def tail(data: bytes, limit: int = 400) -> str:
    """The end of some output, decoded, for a log line."""
    text = data.decode("utf-8", "replace").strip()
    return text if len(text) <= limit else "…" + text[-limit:]


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def run_process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    cwd: str | None = None,
    on_start: Callable[[int], None] | None = None,
) -> ProcessResult:
    """Run ``argv`` to completion; on cancellation, end its process group and re-raise.

    ``on_start`` is told the child's pid (its group's id) as soon as it runs."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        raise OSError(exc.errno, f"cannot run {argv[0]!r}: {exc.strerror}") from None
    try:
        if on_start is not None:
            on_start(proc.pid)
        stdout, stderr = await proc.communicate(stdin)
    except BaseException:
        _signal_group(proc.pid, signal.SIGTERM)
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(proc.wait()), KILL_GRACE)
        _signal_group(proc.pid, signal.SIGKILL)
        raise
    finally:
        if proc.returncode is None:
            _signal_group(proc.pid, signal.SIGKILL)
    assert proc.returncode is not None
    return ProcessResult(proc.returncode, stdout, stderr)
