"""The notices each subscriber has yet to deliver, kept in the store so that a restart, a
crash or a new leader of a scaled-out fleet delivers them: the same ``id``, the attempts
already made, the next attempt when it was due.

A notice is durable from the start: the change that makes it writes it to the outbox
in its own transaction (``Ledger.owed``). When the hub hands it to the subscribers it
is ``taken`` over: the batch that keeps it pending for each subscriber deletes its
outbox row, in one transaction, so that it is in exactly one of the two tables; a
restart reads both (``load``, ``owed``) and loses none.

Subscribers tell ``PendingNotices`` of each notice they hold (queued, or queued again
after a failed attempt) and let go of (delivered, failed for good); what a turn of the
event loop changed is written as one batch on a worker thread, one batch at a time, off
the endpoint's path. A notice's first attempt waits for the batch that keeps it;
retries and settlements are not waited for. A write the store refuses is logged and
tried again with the next batch, and deliveries go on. A notice delivered just before a
crash may be delivered again (at least once, as Event Grid promises); none is lost.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Protocol

from forewarn.eventgrid.delivery import Pending
from forewarn.eventgrid.ledger import CHANNEL, Notice, notice_from_json, notice_json
from forewarn.fabric import StoreUnavailable

__all__ = ["PendingKeeper", "PendingNotices", "PendingRow"]

log = logging.getLogger(__name__)

#: subscription, notice id, the notice as JSON, attempts so far, first offered and next
#: attempt due (epoch seconds: a restart's monotonic clock starts anew).
PendingRow = tuple[str, str, str, int, float, float]


class PendingKeeper(Protocol):
    """Where pending notices outlive the process (the stores of ``forewarn.store``);
    blocking, called on worker threads; each raises ``StoreUnavailable``."""

    def eventgrid_pending(self) -> list[PendingRow]: ...

    def save_eventgrid_pending(
        self,
        keep: Sequence[PendingRow],
        drop: Sequence[tuple[str, str]],
        taken: Sequence[str] = (),
    ) -> None: ...

    def outbox(self, channel: str) -> list[tuple[str, str]]: ...


class PendingNotices:
    """The subscribers' pending notices, written to ``keeper`` once per loop turn."""

    def __init__(self, keeper: PendingKeeper | None) -> None:
        self.keeper = keeper
        #: Held while a batch is written: deleting a subscription takes it, so that no
        #: batch written after the delete brings its notices back.
        self.lock = asyncio.Lock()
        self._unwritten: dict[tuple[str, str], Pending | None] = {}
        self._taken: set[str] = set()  # outbox rows the unwritten batch deletes
        self._writer: asyncio.Task[None] | None = None
        self._told = 0  # changes heard so far
        self._done = 0  # changes written (or refused) so far
        self._progress = asyncio.Condition()

    # ------------------------------------------------- what the subscribers tell

    def kept(self, subscription: str, entry: Pending) -> None:
        """``entry`` waits for an attempt (the first, or a retry)."""
        self._change((subscription.lower(), entry.notice.id), entry)

    def settled(self, subscription: str, notice_id: str) -> None:
        """The notice was delivered, failed for good or was given up."""
        self._change((subscription.lower(), notice_id), None)

    def taken(self, notice_id: str) -> None:
        """The notice was handed to every subscriber that wants it: its outbox row goes
        with the batch that keeps it pending for them."""
        if self.keeper is None:
            return
        self._taken.add(notice_id)
        self._told += 1
        self._start_writing()

    def forget(self, subscription: str) -> None:
        """Leave out what is unwritten of a subscription (deleted with its notices)."""
        name = subscription.lower()
        for key in [k for k in self._unwritten if k[0] == name]:
            del self._unwritten[key]

    def _change(self, key: tuple[str, str], entry: Pending | None) -> None:
        if self.keeper is None:
            return
        self._unwritten[key] = entry
        self._told += 1
        self._start_writing()

    def _start_writing(self) -> None:
        if self._writer is None:
            self._writer = asyncio.get_running_loop().create_task(
                self._write(), name="forewarn-eventgrid-pending"
            )

    # -------------------------------------------------------------- the writes

    async def written(self) -> None:
        """Wait until what was told so far is written (or refused)."""
        mark = self._told
        async with self._progress:
            await self._progress.wait_for(lambda: self._done >= mark or self._writer is None)

    async def _write(self) -> None:
        """Write what accumulated, one batch at a time, until nothing is left (a task
        started in the turn of the first change: it gathers the whole turn's)."""
        assert self.keeper is not None
        try:
            while self._unwritten or self._taken:
                async with self.lock:
                    batch, self._unwritten, upto = self._unwritten, {}, self._told
                    taken, self._taken = self._taken, set()
                    shift = time.time() - time.monotonic()
                    keep = [
                        (sub, notice_id, notice_json(e.notice), e.attempts,
                         e.first_at + shift, e.due + shift)
                        for (sub, notice_id), e in batch.items()
                        if e is not None
                    ]  # fmt: skip
                    drop = [key for key, e in batch.items() if e is None]
                    try:
                        await asyncio.to_thread(
                            self.keeper.save_eventgrid_pending, keep, drop, sorted(taken)
                        )
                    except Exception as exc:  # deliveries go on; tried again with the next
                        log.warning(
                            "%d pending Event Grid notices not written: %s",
                            len(batch) + len(taken), exc,
                        )  # fmt: skip
                        self._unwritten = batch | self._unwritten  # what came since wins
                        self._taken |= taken
                        return
                    finally:
                        await self._advance(upto)
        finally:
            self._writer = None
            await self._advance(self._done)

    async def _advance(self, upto: int) -> None:
        async with self._progress:
            self._done = max(self._done, upto)
            self._progress.notify_all()

    # --------------------------------------------------------------- the reads

    async def load(self) -> dict[str, list[Pending]] | None:
        """The kept notices of each subscription (by its name in lower case), their
        times on this process's monotonic clock; None when the store cannot be read. A
        row that cannot be read is logged and forgotten."""
        if self.keeper is None:
            return {}
        try:
            rows = await asyncio.to_thread(self.keeper.eventgrid_pending)
        except StoreUnavailable as exc:
            log.warning("pending Event Grid notices not read: %s", exc)
            return None
        shift = time.time() - time.monotonic()
        found: dict[str, list[Pending]] = defaultdict(list)
        for sub, notice_id, body, attempts, first_at, due_at in rows:
            try:
                notice = notice_from_json(body)
            except ValueError as exc:
                log.warning("a pending Event Grid notice left out: %s", exc)
                self.settled(sub, notice_id)
                continue
            found[sub].append(Pending(notice, attempts, first_at - shift, due_at - shift))
        return dict(found)

    async def owed(self) -> list[Notice] | None:
        """The notices changes owe that no hub took over yet (the outbox), oldest first;
        None when the store cannot be read. One that cannot be read is logged and
        forgotten."""
        if self.keeper is None:
            return []
        try:
            rows = await asyncio.to_thread(self.keeper.outbox, CHANNEL)
        except StoreUnavailable as exc:
            log.warning("Event Grid notices owed not read: %s", exc)
            return None
        found = []
        for notice_id, body in rows:
            try:
                found.append(notice_from_json(body))
            except ValueError as exc:
                log.warning("an Event Grid notice owed left out: %s", exc)
                self.taken(notice_id)
        return found
