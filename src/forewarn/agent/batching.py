"""Approvals share POSTs: the ids flows approve while one POST is out go in the next.

A document of 10,000 events approved at once would otherwise be 10,000 POSTs at once,
each on a connection of its own, on the loop that answers /healthz and signals. Here one
POST is out at a time, with at most ``MAX_IDS`` ids and ``MAX_BYTES`` of body (the
endpoint refuses bodies over 64 KiB); a lone approval still goes out on the next turn of
the loop. The flows of an answered POST
are woken ``WAKE_PER_TURN`` at a time, so 500 flows resuming do not stall the loop.

The endpoint approves all of a POST's ids or none (400 when one is not this VM's, or has
started or left): a refused POST of several ids is split in halves and each sent again,
so a bad id is refused to its own flow only, for a few more POSTs (about 2 log2 n each).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable

from forewarn.client.errors import BadRequestError

__all__ = ["MAX_BYTES", "MAX_IDS", "WAKE_PER_TURN", "ApprovalBatcher"]

#: Ids in one POST, and the bytes of its body at most (each id costs its length + 16).
MAX_IDS = 500
MAX_BYTES = 32 * 1024
#: Flows woken per turn of the loop once their POST is answered.
WAKE_PER_TURN = 50

_Waiters = dict[str, list["asyncio.Future[None]"]]


class ApprovalBatcher:
    """``approve(event_id)`` returns once a POST approving it was answered 200 (or raises
    what the client raised for it); ``send(*ids)`` is the client's ``approve``."""

    def __init__(self, send: Callable[..., Awaitable[None]]) -> None:
        self._send = send
        self._queue: deque[tuple[str, asyncio.Future[None]]] = deque()
        self._task: asyncio.Task[None] | None = None

    async def approve(self, event_id: str) -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((event_id, waiter))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="approvals")
        await waiter

    async def close(self) -> None:
        """Stop sending; approvals still waiting are cancelled (their flows are over)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        while self._queue:
            self._queue.popleft()[1].cancel()

    def _take(self) -> _Waiters:
        """The next POST's ids, oldest first (a flow that stopped waiting is skipped)."""
        batch: _Waiters = {}
        size = 0
        while self._queue and len(batch) < MAX_IDS:
            event_id, waiter = self._queue[0]
            cost = len(event_id.encode()) + 16
            if batch and event_id not in batch and size + cost > MAX_BYTES:
                break
            self._queue.popleft()
            if waiter.done():
                continue
            if event_id not in batch:
                size += cost
            batch.setdefault(event_id, []).append(waiter)
        return batch

    async def _run(self) -> None:
        while self._queue:
            batch = self._take()
            try:
                await self._post(batch)
            except BaseException:  # cancelled by close(): nobody waits for an answer
                for waiters in batch.values():
                    for waiter in waiters:
                        waiter.cancel()
                raise

    async def _post(self, batch: _Waiters) -> None:
        if not batch:
            return
        ids = list(batch)
        try:
            await self._send(*ids)
        except BadRequestError as exc:
            if len(ids) == 1:
                await _settle(batch, exc)
                return
            half = len(ids) // 2
            await self._post({i: batch[i] for i in ids[:half]})
            await self._post({i: batch[i] for i in ids[half:]})
            return
        except Exception as exc:  # the endpoint is down, after the client's own retries
            await _settle(batch, exc)
            return
        await _settle(batch, None)


async def _settle(batch: _Waiters, failure: BaseException | None) -> None:
    """Answer the batch's waiters, ``WAKE_PER_TURN`` per turn of the loop."""
    woken = 0
    for waiters in list(batch.values()):
        for waiter in waiters:
            if waiter.done():
                continue
            if failure is None:
                waiter.set_result(None)
            else:
                waiter.set_exception(failure)
            woken += 1
            if woken % WAKE_PER_TURN == 0:
                await asyncio.sleep(0)
