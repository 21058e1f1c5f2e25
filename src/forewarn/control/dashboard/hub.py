"""Live updates for every open dashboard, as server-sent events.

One hub per control app. It listens to the fabric: each published change (a leader's
own, or one a follower replicated from the leader) becomes one ``change`` message,
encoded once for every subscriber; a reload of the whole state (a follower that caught
up, a new leader) makes every stream send a fresh snapshot (built once for all of them:
``routes.py``). While anyone watches, a tick once a second carries the clock, the totals
of each region and scope kind whose totals changed, and the first ``MOVED`` scopes where
a VM's poll or state moved with how many did (never a row per scope or VM: a VM that
polls resends nothing of the fleet, and a region rollout a tick the same size). The
tick's counts serve the pages of scopes asked for within the second (``counted``). In a scaled-out
fleet a front-end sees only the polls it served itself, so the tick also merges the poll
times every front-end wrote to the store (every few seconds).

The control plane shares the metadata endpoint's event loop. So messages are batched: at
most one write per stream every ``BATCH_SECONDS``, whatever the change rate, and a batch
is handed to ``BROADCAST_SLICE`` streams per turn of the loop, so that VMs' requests are
read in between (VMs' latency does not grow with the operator's open dashboards:
``bench/dashboard_streams.py``). A subscriber is anything that takes a message at once:
on forewarn's own listener, the stream's connection itself (``wire.py``: one write, no
task woken, no trip through the ASGI server), elsewhere a queue the stream's response
reads.

A subscriber that does not keep up (its queue full, its connection's buffer past a bound)
is dropped; its browser reconnects and starts again from a snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable
from typing import Any, Protocol

import msgspec

from forewarn.control.dashboard.fleet_rollup import FleetTally, ScopeIndex, tally_fleet
from forewarn.control.dashboard.kind_rollup import (
    MOVED,
    Counted,
    KindIndex,
    KindTotals,
    kind_totals,
)
from forewarn.control.dashboard.stream_messages import change_message
from forewarn.fabric import Changes, Fabric, StoreUnavailable
from forewarn.rehearsal import ReactionTracker

__all__ = ["BATCH_SECONDS", "RELOAD", "Hub", "Message", "StreamQueue", "Subscriber", "sse"]

log = logging.getLogger(__name__)

TICK_SECONDS = 1.0
#: How often a follower reads the poll times other front-ends wrote.
SHARED_POLLS_SECONDS = 5.0
QUEUE_LIMIT = 2000
#: At most one batch of messages per stream this often.
BATCH_SECONDS = 0.1
#: Streams handed a batch per turn of the loop (the endpoint reads between two turns).
BROADCAST_SLICE = 25
#: VMs a tick counts per turn of the loop (some 0.3 ms).
TICK_SLICE = 1000
#: VMs the counts asked for outside a tick (a snapshot, a page of scopes) count per turn.
COUNT_SLICE = 20_000

#: Queued for a subscriber when the whole state was replaced: send a snapshot.
RELOAD = b"reload"

Message = bytes | None


def sse(kind: str, data: Any) -> bytes:
    """One server-sent event: ``event: kind`` and its JSON ``data``."""
    return b"event: " + kind.encode() + b"\ndata: " + msgspec.json.encode(data) + b"\n\n"


class Subscriber(Protocol):
    """One open stream, as the hub hands it messages."""

    def deliver(self, message: bytes) -> bool:
        """Take ``message`` (events, or ``RELOAD``) now; False when too far behind."""
        ...

    def end(self) -> None:
        """The stream is over: the server stops, or it fell behind."""
        ...


class StreamQueue(asyncio.Queue[Message]):
    """A subscriber that queues its messages for the stream's response to read (``None``
    ends it)."""

    def deliver(self, message: bytes) -> bool:
        try:
            self.put_nowait(message)
        except asyncio.QueueFull:
            return False
        return True

    def end(self) -> None:
        while not self.empty():
            self.get_nowait()
        self.put_nowait(None)


class Hub:
    """Fans changes out to the dashboards watching this process."""

    def __init__(self, fabric: Fabric, reactions: ReactionTracker | None = None) -> None:
        """``reactions`` reads the poll times other front-ends wrote (a scaled-out fleet)."""
        self.fabric = fabric
        self._reactions = reactions
        self._subscribers: set[Subscriber] = set()
        self._closed = False
        self._ticker: asyncio.Task[None] | None = None
        self._sent_polls: dict[str, float] = {}
        self._sent_status: dict[str, str] = {}
        self._sent_kinds: dict[tuple[str, str], KindTotals] = {}
        self._shared_polls: dict[str, float] = {}
        #: Each scope's region and kind, each polled VM's scope (the snapshot's too).
        self.index = ScopeIndex(fabric.topology)
        self._kinds: KindIndex | None = None
        #: The last tick's counts, and when (``time.monotonic``) they were made.
        self._tallied: tuple[float, FleetTally] | None = None
        self._shared_at = 0.0
        #: Changes and reloads published so far: a snapshot begun at this count or later
        #: serves any stream that subscribed (or was told to reload) at it.
        self.published = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._batch: list[bytes] = []
        self._flush_at: asyncio.TimerHandle | None = None
        self._last_flush = -math.inf
        fabric.on_publish(self._published)
        fabric.on_reload(self._reloaded)

    # ------------------------------------------------------------- subscribers

    @property
    def closed(self) -> bool:
        """True once the server is stopping: streams end, new ones are refused."""
        return self._closed

    def subscribe(self) -> StreamQueue:
        """A queue of encoded messages for one stream (``None`` ends it)."""
        queue = StreamQueue(QUEUE_LIMIT)
        self.attach(queue)
        return queue

    def attach(self, subscriber: Subscriber) -> None:
        """Hand ``subscriber`` every message from now on."""
        self._subscribers.add(subscriber)
        self._loop = asyncio.get_running_loop()
        if self._ticker is None or self._ticker.done():
            self._ticker = self._loop.create_task(self._tick_forever())

    def unsubscribe(self, subscriber: Subscriber) -> None:
        """Forget a stream that ended."""
        self._subscribers.discard(subscriber)
        if not self._subscribers and self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None

    def close(self) -> None:
        """End every stream (the server is stopping: open streams would hold it up)."""
        self._closed = True
        self._batch.clear()
        if self._flush_at is not None:
            self._flush_at.cancel()
            self._flush_at = None
        for subscriber in list(self._subscribers):
            self._end(subscriber)
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None

    def _end(self, subscriber: Subscriber) -> None:
        self._subscribers.discard(subscriber)
        subscriber.end()

    def _send(self, message: bytes) -> None:
        """Queue ``message`` for every stream with the next batch (a reload drops the
        changes batched before it: the snapshot has them)."""
        if not self._subscribers or self._loop is None:
            return
        if message is RELOAD:
            self._batch.clear()
        self._batch.append(message)
        if self._flush_at is None:
            wait = max(0.0, self._last_flush + BATCH_SECONDS - self._loop.time())
            # Even at once, on the next turn of the loop: one transaction's changes go together.
            self._flush_at = self._loop.call_later(wait, self.flush)

    def flush(self) -> None:
        """Hand every stream what is batched, now: a reload, then the rest as one message."""
        if self._flush_at is not None:
            self._flush_at.cancel()
            self._flush_at = None
        if self._loop is not None:
            self._last_flush = self._loop.time()
        batch, self._batch = self._batch, []
        if batch and batch[0] is RELOAD:
            self._broadcast(RELOAD)
            del batch[0]
        if batch:
            self._broadcast(batch[0] if len(batch) == 1 else b"".join(batch))

    def _broadcast(self, message: bytes) -> None:
        self._deliver(message, list(self._subscribers), 0)

    def _deliver(self, message: bytes, subscribers: list[Subscriber], start: int) -> None:
        """Hand ``BROADCAST_SLICE`` streams the message per turn of the loop: 300 streams
        written at once would delay the next VM's request by 300 writes."""
        end = start + BROADCAST_SLICE
        for subscriber in subscribers[start:end]:
            if subscriber not in self._subscribers:
                continue  # ended meanwhile
            if not subscriber.deliver(message):  # too slow: start it over from a snapshot
                log.warning("a dashboard stream fell behind; it is ended and will reconnect")
                self._end(subscriber)
        if end < len(subscribers) and self._loop is not None and not self._closed:
            self._loop.call_soon(self._deliver, message, subscribers, end)

    # ----------------------------------------------------------------- sources

    def _published(self, changes: Changes) -> None:
        self.published += 1
        if not self._subscribers:
            return
        message = change_message(self.fabric, changes)
        if message is not None:
            self._send(sse("change", message))

    def _reloaded(self) -> None:
        self.published += 1
        self._send(RELOAD)

    def polls(self) -> dict[str, float]:
        """Each VM's last poll as this process knows it (its own, merged with what the
        other front-ends of a scaled-out fleet wrote)."""
        mine = self.fabric.last_requests.copy()
        if not self._shared_polls:
            return mine
        merged = dict(self._shared_polls)
        for name, at in mine.items():
            if at > merged.get(name, 0.0):
                merged[name] = at
        return merged

    async def refresh_shared_polls(self) -> None:
        """Read the poll times every front-end wrote (followers and scaled-out leaders)."""
        if not self.fabric.replicated or self._reactions is None:
            return  # a single process serves every poll itself
        try:
            rows = await asyncio.to_thread(self._reactions.shared_polls)
        except StoreUnavailable as exc:
            log.warning("shared poll times unavailable: %s", exc)
            return
        self._shared_polls = {p.vm: p.last_poll for p in rows if p.last_poll is not None}

    def kinds(self) -> KindIndex:
        """Each region and kind's scopes in name order (read from the fleet once)."""
        if self._kinds is None:
            self._kinds = KindIndex(self.fabric, self.index)
        return self._kinds

    async def counted(self) -> Counted:
        """The fleet's counts: the last tick's while they are at most a tick old (a page
        of scopes asked for as a tick changed its kind costs no pass over the polls),
        counted now otherwise (``COUNT_SLICE`` poll times a turn of the loop)."""
        tallied = self._tallied
        if tallied is not None and time.monotonic() - tallied[0] <= TICK_SECONDS:
            return Counted.of(self.fabric, tallied[1])
        tally = await tally_fleet(self.index, self.fabric.clock.now(), self.polls(),
                                  self.fabric.vm_statuses(), step=COUNT_SLICE)  # fmt: skip
        return Counted.of(self.fabric, tally)

    async def tick_message(self) -> dict[str, Any]:
        """The clock, the totals of each region and kind whose totals changed since the
        last tick (``kinds``), and the scopes where a VM's last poll or state moved: the
        first ``MOVED`` by name (``moved``: the page asks again for the VMs it shows of
        those) and how many (``moved_total``: more than named, and the page asks again
        for every one it shows). Gives the loop back every ``TICK_SLICE`` VMs: a pass
        over 10,000 at once held the endpoint's polls some milliseconds every second."""
        now = self.fabric.clock.now()
        polls, statuses = self.polls(), self.fabric.vm_statuses()
        sent_polls, sent_status = self._sent_polls, self._sent_status
        tally = await tally_fleet(self.index, now, polls, statuses, step=TICK_SLICE,
                                  sent_polls=sent_polls, sent_status=sent_status)  # fmt: skip
        self._sent_polls, self._sent_status = polls, statuses
        self._tallied = (time.monotonic(), tally)
        changed = []
        for key, totals in kind_totals(self.kinds(), Counted.of(self.fabric, tally)).items():
            if self._sent_kinds.get(key) != totals:
                changed.append(totals)
                self._sent_kinds[key] = totals
        moved = sorted(tally.moved)
        return {"now": now, "kinds": msgspec.to_builtins(changed), "moved": moved[:MOVED],
                "moved_total": len(moved)}  # fmt: skip

    async def _tick_forever(self, clock: Callable[[], float] = time.monotonic) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            if clock() - self._shared_at >= SHARED_POLLS_SECONDS:
                self._shared_at = clock()
                with contextlib.suppress(Exception):
                    await self.refresh_shared_polls()
            try:
                self._send(sse("tick", await self.tick_message()))
            except Exception:  # never let one bad tick end live updates
                log.exception("building a dashboard tick failed")
