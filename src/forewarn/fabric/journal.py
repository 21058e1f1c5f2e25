"""How the engine's changes reach the store: a commit pipeline with a pluggable writer.

The engine builds a change, hands it to a ``Journal`` as a ``Commit`` and keeps building
on top of it; the journal makes it durable and then calls ``settle`` on the engine's
thread, which is when the change becomes visible. ``InlineJournal`` writes at once on the
caller's thread (tests, embedding); ``forewarn.store.ThreadedJournal`` writes on a thread
of its own with group commit, so that nothing on the event loop waits for a disk.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from forewarn.fabric.errors import StoreUnavailable
from forewarn.fabric.ports import Store
from forewarn.fabric.records import Changes
from forewarn.fabric.scope_view import ScopeView

__all__ = ["Commit", "InlineJournal", "Journal", "SettleCallback", "as_unavailable"]

log = logging.getLogger(__name__)


def as_unavailable(exc: BaseException) -> StoreUnavailable:
    """A failed write as the error callers get (unexpected faults are logged in full)."""
    if isinstance(exc, StoreUnavailable):
        return exc
    log.error("writing a change failed", exc_info=exc)
    return StoreUnavailable(f"the change could not be written: {exc!r}")


@dataclass(eq=False, slots=True)
class Commit:
    """One change on its way to disk; ``error`` is set when it could not be written.

    ``waiters`` are futures of callers that answer only once the change is durable.
    ``bookkeeping`` commits (a scope's last request time) are retried later when they
    fail, never reported to a client. ``views`` are the scope views it publishes.
    """

    changes: Changes
    generation: int
    bookkeeping: bool = False
    views: dict[str, ScopeView] = field(default_factory=dict)
    done: bool = False
    error: StoreUnavailable | None = None
    waiters: list[asyncio.Future[None]] = field(default_factory=list)

    def settle(self, error: StoreUnavailable | None) -> None:
        """Record the outcome and wake every caller waiting for it."""
        self.done = True
        self.error = error
        for waiter in self.waiters:
            if waiter.done():
                continue
            if error is None:
                waiter.set_result(None)
            else:  # each its own: one object raised by many callers grows a traceback
                waiter.set_exception(error.again())
        self.waiters.clear()


#: Called on the engine's thread with commits in submission order and the error that
#: ended them (None: all durable).
SettleCallback = Callable[[Sequence[Commit], StoreUnavailable | None], None]


class Journal(Protocol):
    """Makes commits durable in submission order, then settles them."""

    def start(self, settle: SettleCallback) -> None:
        """Begin accepting commits; ``settle`` reports their outcome."""
        ...

    def submit(self, commit: Commit) -> None:
        """Queue a commit behind every earlier one."""
        ...

    def discard_queued(self) -> None:
        """After a failure: drop commits not yet written (they were built on it)."""
        ...

    def probe(self) -> None:
        """Try a harmless write, to learn whether a failing store has recovered."""
        ...

    def close(self) -> None:
        """Write what is queued and stop."""
        ...


class InlineJournal:
    """Writes each commit at once, on the caller's thread."""

    def __init__(
        self, store: Store, on_written: Callable[[Sequence[Changes]], None] | None = None
    ) -> None:
        self._store = store
        self._settle: SettleCallback | None = None
        self._on_written = on_written

    def start(self, settle: SettleCallback) -> None:
        self._settle = settle

    def submit(self, commit: Commit) -> None:
        assert self._settle is not None, "journal not started"
        try:
            self._store.apply(commit.changes)
        except Exception as exc:  # whatever went wrong, the change must not stay half-made
            self._settle([commit], as_unavailable(exc))
            return
        if self._on_written is not None:
            self._on_written([commit.changes])
        self._settle([commit], None)

    def discard_queued(self) -> None:
        """Nothing is ever queued."""

    def probe(self) -> None:
        assert self._settle is not None, "journal not started"
        commit = Commit(Changes(), generation=-1, bookkeeping=True)
        try:
            self._store.apply(commit.changes)
        except StoreUnavailable as exc:
            self._settle([commit], exc)
            return
        self._settle([commit], None)

    def close(self) -> None:
        """Nothing to flush."""
