"""Group commit on a thread of its own: the event loop never waits for a disk.

The engine submits commits from the loop; this thread takes everything queued since its
last write and writes it in one transaction (one fsync for many changes), then reports
back on the loop, where the changes become visible. After a failed write it writes
nothing more until the engine has rolled back and called ``discard_queued``: whatever
was queued behind the failure was built on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Callable, Sequence

from forewarn.fabric import Changes, Commit, SettleCallback, Store, StoreUnavailable
from forewarn.fabric.journal import as_unavailable

__all__ = ["ThreadedJournal", "yield_to_the_loop"]

log = logging.getLogger(__name__)

#: How much lower the writer thread runs than the event loop (a nice increment).
WRITER_NICENESS = 10

#: Most commits written in one transaction (bounds one write's latency).
MAX_GROUP = 1024

_SKIPPED = StoreUnavailable("not written: an earlier change in the queue failed")


class ThreadedJournal:
    """A ``Journal`` that writes on a background thread with group commit."""

    def __init__(
        self,
        store: Store,
        *,
        on_written: Callable[[Sequence[Changes]], None] | None = None,
    ) -> None:
        """``on_written`` runs on the writer thread after each durable group (logging).

        Outcomes are reported on the event loop that submits the first commit."""
        self._store = store
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_written = on_written
        self._settle: SettleCallback | None = None
        self._queue: list[Commit] = []
        self._poisoned = False
        self._closing = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="forewarn-writer", daemon=True)
        self.groups_written = 0
        self.commits_written = 0

    def start(self, settle: SettleCallback) -> None:
        self._settle = settle

    def submit(self, commit: Commit) -> None:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()  # commits come from this loop only
            self._thread.start()
        with self._cond:
            self._queue.append(commit)
            self._cond.notify()

    def discard_queued(self) -> None:
        with self._cond:
            self._queue.clear()
            self._poisoned = False

    def probe(self) -> None:
        self.submit(Commit(Changes(), generation=-1, bookkeeping=True))

    def close(self) -> None:
        """Write what is queued, then stop the thread."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _run(self) -> None:
        yield_to_the_loop()
        while True:
            with self._cond:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if not self._queue:
                    return
                group = self._queue[:MAX_GROUP]
                del self._queue[:MAX_GROUP]
                poisoned = self._poisoned
            if poisoned:  # built on a change that failed: the engine rolls it back
                self._report(group, _SKIPPED)
                continue
            error = self._write(group)
            if error is not None and any(c.generation >= 0 for c in group):
                with self._cond:
                    self._poisoned = True  # until the engine has rolled back (a probe
                    # changes nothing, so nothing is built on it)
            self._report(group, error)

    def _write(self, group: list[Commit]) -> StoreUnavailable | None:
        changes = [c.changes for c in group]
        try:
            self._store.apply_all(changes)
        except Exception as exc:
            return as_unavailable(exc)
        self.groups_written += 1
        self.commits_written += len(group)
        if self._on_written is not None:
            try:
                self._on_written(changes)
            except Exception:  # logging must never undo a durable write
                log.exception("after-write hook failed")
        return None

    def _report(self, group: list[Commit], error: StoreUnavailable | None) -> None:
        assert self._settle is not None and self._loop is not None
        with contextlib.suppress(RuntimeError):  # the loop is gone (shutdown): data is on disk
            self._loop.call_soon_threadsafe(self._settle, group, error)


def yield_to_the_loop() -> None:
    """Run this thread below the event loop's: the loop answers every VM, the writer
    (and the reaction tracker's thread) only makes changes durable, and a moment later
    is fine for that. Under a real-time
    policy (benchmarks) the writer stays real-time one step below the loop, so that no
    other process can hold it up while it has the GIL; otherwise it is niced."""
    with contextlib.suppress(OSError, AttributeError):
        policy = os.sched_getscheduler(0)
        if policy in (os.SCHED_FIFO, os.SCHED_RR):
            priority = os.sched_getparam(0).sched_priority
            if priority > os.sched_get_priority_min(policy):
                os.sched_setscheduler(0, policy, os.sched_param(priority - 1))
            return
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WRITER_NICENESS)
