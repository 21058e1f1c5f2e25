"""A follower keeps its views current from the leader's change log.

The feed LISTENs before anything is read, so no commit can slip between a read and the
next wait. Each wake-up reads every log entry after the last one applied and applies
them in order (``Fabric.replicate``). A hole in the sequence (entries pruned while this
process was away) or a lost connection means changes may have been missed: the whole
state is reloaded from the database, consistently with the log position it is at.

Lag is measured per entry from its commit (the database's clock, when the leader wrote
it) to the moment this process applied it, without comparing two machines' clocks: the
database's clock at read time minus the commit time, plus the local time from that read
to the apply.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

import structlog

from forewarn.fabric import Fabric, StoreUnavailable
from forewarn.store import StoreError
from forewarn.store.postgres import CHANGES_CHANNEL, PostgresStore
from forewarn.store.postgres_cluster import ChangeFeed, LogEntry

__all__ = ["Replicator", "close_later"]

log = structlog.get_logger("forewarn")

#: Longest wait for a notification before reading the log anyway.
POLL_SECONDS = 1.0
#: Pause before reconnecting after the database went away.
RECONNECT_SECONDS = 0.5


def close_later(feed: ChangeFeed) -> None:
    """Close a feed off the loop (a thread may still wait on it); never raises, even
    while the loop shuts down."""
    with contextlib.suppress(RuntimeError):
        asyncio.get_running_loop().run_in_executor(None, feed.close)


class Replicator:
    """Applies the change log to a follower's fabric until cancelled."""

    def __init__(
        self,
        fabric: Fabric,
        store: PostgresStore,
        *,
        on_lag: Callable[[float], None] | None = None,
        on_reload: Callable[[], None] | None = None,
        on_current: Callable[[float], None] | None = None,
    ) -> None:
        """``on_current(asked_at)``: the views hold every change committed before
        ``asked_at`` (``time.monotonic()``), after a reload or a read that found nothing
        new (the fabric's ``Standing``)."""
        self.fabric = fabric
        self.store = store
        #: Sequence number of the last change applied (the state includes every earlier one).
        self.applied = store.loaded_head
        #: Commit-to-view time of the last change applied (None: none yet).
        self.last_lag: float | None = None
        self.connected = False
        self._on_lag = on_lag
        self._on_reload = on_reload
        self._on_current = on_current
        self._advanced = asyncio.Condition()

    async def run(self, *, reload_first: bool) -> None:
        """Follow the log; ``reload_first``: start from a fresh snapshot."""
        try:
            await self._follow(reload_first)
        finally:  # stopped (this process leads now): no longer kept current
            self.connected = False

    async def _follow(self, reload_first: bool) -> None:
        reload = reload_first
        while True:
            feed: ChangeFeed | None = None
            try:
                feed = await asyncio.to_thread(
                    ChangeFeed, self.store.url, CHANGES_CHANNEL, self.store.session_name
                )
                self.connected = True
                if reload:
                    await self._reload()
                reload = True  # after a reconnect, changes may have been missed
                while True:
                    if await self._catch_up(feed):
                        continue  # a hole: reloaded; read on from there
                    await asyncio.to_thread(feed.wait, POLL_SECONDS)
            except (StoreUnavailable, StoreError) as exc:
                self.connected = False
                log.warning("replication interrupted; reconnecting", reason=str(exc))
                await asyncio.sleep(RECONNECT_SECONDS)
            except Exception:  # a change this process cannot apply: start over from scratch
                self.connected = False
                log.exception("applying a change failed; reloading the whole state")
                await asyncio.sleep(RECONNECT_SECONDS)
            finally:
                if feed is not None:
                    close_later(feed)

    async def _reload(self) -> None:
        asked = time.monotonic()
        snapshot = await asyncio.to_thread(self.store.load)
        position = await asyncio.to_thread(self.store.clock_position)
        self.fabric.reload(snapshot, clock_position=position)
        self.applied = self.store.loaded_head
        if self._on_reload is not None:
            self._on_reload()
        self._current(asked)
        await self._announce()

    def _current(self, asked: float) -> None:
        if self._on_current is not None:
            self._on_current(asked)

    async def _catch_up(self, feed: ChangeFeed) -> bool:
        """Apply what the log holds after ``applied``; True when a hole forced a reload."""
        while True:
            asked = time.monotonic()
            entries, db_now, oldest = await asyncio.to_thread(feed.since, self.applied)
            read_at = time.monotonic()
            if not entries:
                self._current(asked)  # nothing newer was committed before ``asked``
                return False
            if entries[0].seq != self.applied + 1:
                log.warning(
                    "change log has a hole; reloading the whole state",
                    applied=self.applied, next=entries[0].seq, oldest_kept=oldest,
                )  # fmt: skip
                await self._reload()
                return True
            self._apply(entries, db_now, read_at)
            await self._announce()

    def _apply(self, entries: list[LogEntry], db_now: float, read_at: float) -> None:
        self.fabric.replicate([e.changes for e in entries])
        self.applied = entries[-1].seq
        local = time.monotonic() - read_at
        for entry in entries:
            lag = max(0.0, db_now - entry.committed_at) + local
            if self._on_lag is not None:
                self._on_lag(lag)
        self.last_lag = max(0.0, db_now - entries[-1].committed_at) + local

    async def _announce(self) -> None:
        async with self._advanced:
            self._advanced.notify_all()

    async def wait_applied(self, seq: int, timeout: float) -> bool:
        """Wait until the change ``seq`` is applied here; False after ``timeout`` s."""
        try:
            async with asyncio.timeout(timeout), self._advanced:
                await self._advanced.wait_for(lambda: self.applied >= seq)
        except TimeoutError:
            return False
        return True
