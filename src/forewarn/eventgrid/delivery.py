"""Delivering notices to one webhook: a bounded queue (``max_pending``, the notice in
flight and its retries included), one request in flight, Event Grid's retry schedule
(10 s, 30 s, 1 min, 5 min, ... divided by the time scale) with the same event ``id`` on
every attempt, until ``maxDeliveryAttempts`` or the time to live.

Each subscriber has its own task: a webhook that hangs or refuses delays only itself;
the fabric only appends to the queue (``offer``). Its ``keeping`` hears each notice it
holds and lets go of (the hub keeps them in the store: ``forewarn.eventgrid.pending``),
and only a leader attempts: a queue read back by a process about to lead waits for it."""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import json
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from forewarn.eventgrid.ledger import Notice
from forewarn.eventgrid.payloads import cloud_event, event_grid_event
from forewarn.eventgrid.subscriptions import Subscription

__all__ = ["RETRY_SCHEDULE", "Attempt", "DeliveryLog", "Keeping", "Pending", "Subscriber"]

#: Event Grid's documented retry schedule (seconds before each retry); then 12 h.
RETRY_SCHEDULE = (10.0, 30.0, 60.0, 300.0, 600.0, 1800.0, 3600.0, 10800.0, 21600.0)
#: Statuses Event Grid never retries.
NO_RETRY = frozenset({400, 403, 413})
MAX_PENDING = 1000
#: How often a subscriber that may not deliver (its process does not lead) looks again.
LEAD_POLL = 0.1


@dataclass(frozen=True, slots=True)
class Attempt:
    """One try at delivering one notice: what the webhook answered, what came next."""

    subscription: str
    id: str
    event_id: str
    status: str
    attempt: int
    at: float
    answer: str
    outcome: str  # delivered, retrying, failed, dropped
    retry_in: float | None = None
    scope_id: str | None = None

    def history(self) -> tuple[str | None, str | None, dict[str, Any]]:
        """This attempt as a history entry's ``(scope_id, event_id, detail)``."""
        detail: dict[str, Any] = {
            "subscription": self.subscription, "status": self.status,
            "attempt": self.attempt, "outcome": self.outcome, "answer": self.answer,
            "id": self.id,
        }  # fmt: skip
        if self.retry_in is not None:
            detail["retry_in"] = round(self.retry_in, 3)
        return self.scope_id, self.event_id, detail

    def out(self) -> dict[str, Any]:
        return {
            "subscription": self.subscription, "id": self.id, "event_id": self.event_id,
            "event_status": self.status, "attempt": self.attempt, "at": self.at,
            "answer": self.answer, "outcome": self.outcome, "retry_in": self.retry_in,
        }  # fmt: skip


class DeliveryLog:
    """The last ``size`` attempts of every subscriber, newest last; ``on_add`` hears
    each one (the hub writes them to the history)."""

    def __init__(self, size: int = 2000) -> None:
        self._attempts: deque[Attempt] = deque(maxlen=size)
        self.on_add: Callable[[Attempt], None] | None = None

    def add(self, attempt: Attempt) -> None:
        self._attempts.append(attempt)
        if self.on_add is not None:
            self.on_add(attempt)

    def list(self, subscription: str | None = None, limit: int = 200) -> list[Attempt]:
        rows = [a for a in self._attempts if subscription in (None, a.subscription)]
        return rows[-limit:] if limit else []


@dataclass
class Pending:
    """A notice waiting for an attempt: how many were made, when it was first offered
    (its time to live runs from there) and when the next is due (``time.monotonic``)."""

    notice: Notice
    attempts: int
    first_at: float
    due: float


class Keeping(Protocol):
    """Hears the notices a subscriber holds and lets go of; ``written`` returns once
    what it heard so far is kept (or was refused)."""

    def kept(self, subscription: str, entry: Pending) -> None: ...

    def settled(self, subscription: str, notice_id: str) -> None: ...

    async def written(self) -> None: ...


class Subscriber:
    """Delivers to one subscription's webhook."""

    def __init__(
        self,
        sub: Subscription,
        client: httpx.AsyncClient,
        log: DeliveryLog,
        *,
        topic: str,
        now: Callable[[], float],
        time_scale: float = 1.0,
        max_pending: int = MAX_PENDING,
        keeping: Keeping | None = None,
        leading: Callable[[], bool] = lambda: True,
    ) -> None:
        self.sub = sub
        self.client = client
        self.log = log
        self.topic = topic
        self.now = now
        self.scale = time_scale
        self.max_pending = max_pending
        self.keeping = keeping
        self.leading = leading
        self._heap: list[tuple[float, int, Pending]] = []
        self._current: Pending | None = None  # the one being attempted
        self._seq = itertools.count()
        self._wake = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    def offer(self, notice: Notice) -> None:
        """Queue a notice (on the event loop's thread). The bound counts the notice being
        attempted, so its retry always has its place back: a notice offered to a full
        queue is the one dropped (recorded: ``dropped``, "queue full"), never one queued."""
        if len(self._heap) + (self._current is not None) >= self.max_pending:
            self._drop(notice)
            return
        now = time.monotonic()
        self._queue(Pending(notice, 0, now, now))

    def restore(self, entries: Sequence[Pending]) -> None:
        """Queue notices read back from the store (or from the subscriber this one
        replaces), each due when it was; one whose time to live ran out meanwhile fails
        when it comes due. Past the bound, the last offered are dropped (and forgotten)."""
        ordered = sorted(entries, key=lambda entry: entry.first_at)
        for entry in ordered[self.max_pending :]:
            self._drop(entry.notice, entry.attempts)
            if self.keeping is not None:
                self.keeping.settled(self.sub.spec.name, entry.notice.id)
        for entry in ordered[: self.max_pending]:
            heapq.heappush(self._heap, (entry.due, next(self._seq), entry))
        self.sub.pending = len(self._heap)
        self._wake.set()

    def _drop(self, notice: Notice, attempts: int = 0) -> None:
        self.sub.dropped += 1
        self._record(notice, attempts, "queue full", "dropped")

    def queued(self) -> list[Pending]:
        """The notices waiting (for the subscriber that replaces this closed one), with
        the one whose attempt closing cut off."""
        waiting = [entry for _, _, entry in self._heap]
        return waiting if self._current is None else [self._current, *waiting]

    def _queue(self, entry: Pending) -> None:
        heapq.heappush(self._heap, (entry.due, next(self._seq), entry))
        self.sub.pending = len(self._heap)
        if self.keeping is not None:
            self.keeping.kept(self.sub.spec.name, entry)
        self._wake.set()

    def start(self) -> None:
        name = f"forewarn-eventgrid-{self.sub.spec.name}"
        self.task = asyncio.create_task(self._run(), name=name)

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task

    async def _run(self) -> None:
        while True:
            if not self._heap:
                self._wake.clear()
                await self._wake.wait()
                continue
            due = self._heap[0][0] - time.monotonic()
            if due > 0:
                self._wake.clear()
                # asyncio.timeout, not wait_for: on 3.11 wait_for can drop a cancellation
                # that lands as its wait ends, and stopping the deliveries would hang.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(due):
                        await self._wake.wait()
                continue
            if not self.leading():
                await asyncio.sleep(LEAD_POLL)
                continue
            _, _, entry = heapq.heappop(self._heap)
            self._current = entry
            await self._attempt(entry)
            self._current = None
            self.sub.pending = len(self._heap)

    async def _attempt(self, entry: Pending) -> None:
        notice = entry.notice
        spec = self.sub.spec
        expires = entry.first_at + spec.ttl_minutes * 60 / self.scale
        if time.monotonic() > expires:  # while no process could deliver it
            self._settle(entry, "time to live expired", "failed")
            return
        if entry.attempts == 0 and self.keeping is not None:
            await self.keeping.written()  # a webhook never sees a notice not yet kept
        entry.attempts += 1
        answer, status = await self._send(notice, entry.attempts - 1)
        if status is not None and 200 <= status < 300:
            self._settle(entry, answer, "delivered")
            return
        self.sub.last_error = answer
        delay = RETRY_SCHEDULE[min(entry.attempts - 1, len(RETRY_SCHEDULE) - 1)] / self.scale
        if (
            status in NO_RETRY
            or entry.attempts >= spec.max_attempts
            or time.monotonic() + delay > expires
        ):
            self._settle(entry, answer, "failed")
            return
        self._record(notice, entry.attempts, answer, "retrying", delay)
        entry.due = time.monotonic() + delay
        self._queue(entry)

    def _settle(self, entry: Pending, answer: str, outcome: str) -> None:
        if outcome == "delivered":
            self.sub.delivered += 1
        else:
            self.sub.failed += 1
        self._record(entry.notice, entry.attempts, answer, outcome)
        if self.keeping is not None:
            self.keeping.settled(self.sub.spec.name, entry.notice.id)

    async def _send(self, notice: Notice, count: int) -> tuple[str, int | None]:
        spec = self.sub.spec
        headers = {"aeg-subscription-name": spec.name.upper(), "aeg-delivery-count": str(count)}
        if spec.schema == "CloudEventSchemaV1_0":
            body: Any = cloud_event(notice, self.topic)
            headers["content-type"] = "application/cloudevents+json; charset=utf-8"
        else:
            body = [event_grid_event(notice, self.topic)]
            headers["aeg-event-type"] = "Notification"
            headers["aeg-data-version"] = "1"
            headers["aeg-metadata-version"] = "1"
            headers["content-type"] = "application/json"
        try:
            response = await self.client.post(
                spec.endpoint, content=json.dumps(body).encode(), headers=headers
            )
        except httpx.TimeoutException:
            return "timed out", None
        except httpx.HTTPError as exc:
            return (str(exc) or type(exc).__name__)[:200], None
        return str(response.status_code), response.status_code

    def _record(
        self, notice: Notice, attempt: int, answer: str, outcome: str, retry_in: float | None = None
    ) -> None:
        self.log.add(Attempt(
            self.sub.spec.name, notice.id, notice.event_id, notice.status, attempt,
            self.now(), answer, outcome, retry_in, notice.scope_id,
        ))  # fmt: skip
