"""The Event Grid hub: subscriptions (checked by the validation handshake before any event
goes out), one ``Subscriber`` each, and the log of their attempts.

Subscriptions are kept in the store (``SubscriptionKeeper``) when they are created,
validated or deleted, and ``resume`` starts delivering to them again after a restart, or
when this process takes the lead of a scaled-out fleet, without a new handshake. The
notices they have yet to deliver are kept too (``PendingNotices``: written once per turn,
off the loop), and ``resume`` queues them again with their attempts and due times.

A notice is written with the change that makes it (the outbox, ``Ledger.owed``); the
hub takes it over once the change is visible, handing it to each subscriber that wants
it, and the batch that keeps it pending for them deletes it from the outbox. Until this
process has resumed as the leader it takes nothing: ``resume`` reads what the outbox
holds (changes made before it, by this process or by a leader that died) and takes it
with what was published meanwhile, so that no change's notice is lost to a crash.

Every attempt's outcome also goes to the durable history (``history``, the fabric's
``note``): gathered and written once per turn of the event loop, as bookkeeping the
delivery never waits for.

Notices come from the ``Ledger`` on the thread that published the change; the hub only
hands them to the subscribers' queues on the event loop, and only while this process
leads (a follower of a scaled-out fleet sees the same changes: one delivery, not two;
the outbox keeps them for whichever process leads next).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import httpx

from forewarn.eventgrid.delivery import Attempt, DeliveryLog, Pending, Subscriber
from forewarn.eventgrid.destinations import DestinationRefused, Destinations, GuardedTransport
from forewarn.eventgrid.handshake import handshake
from forewarn.eventgrid.ledger import Ledger, Notice
from forewarn.eventgrid.pending import PendingKeeper, PendingNotices
from forewarn.eventgrid.subscriptions import (
    Slots,
    Subscription,
    SubscriptionError,
    SubscriptionSpec,
)
from forewarn.fabric import StoreUnavailable
from forewarn.rehearsal.tracker import DELIVERY_KIND

__all__ = [
    "HISTORY_KIND",
    "MAX_SUBSCRIPTIONS",
    "EventGrid",
    "HandshakeFailed",
    "HistoryWriter",
    "SubscriptionKeeper",
]

MAX_SUBSCRIPTIONS = 100
#: The history kind of one delivery attempt's outcome (the rehearsal report reads them).
HISTORY_KIND = DELIVERY_KIND

log = logging.getLogger(__name__)

#: Writes history entries ``(scope_id, event_id, detail)`` of one kind.
HistoryWriter = Callable[[str, Sequence[tuple[str | None, str | None, dict[str, Any]]]], None]


class SubscriptionKeeper(PendingKeeper, Protocol):
    """Where subscriptions and their pending notices outlive the process (the stores of
    ``forewarn.store``); blocking: the hub calls it on worker threads. Each raises
    ``StoreUnavailable``; deleting a subscription deletes its pending notices too."""

    def eventgrid_subscriptions(self) -> list[str]: ...

    def save_eventgrid_subscription(self, name: str, body: str) -> None: ...

    def delete_eventgrid_subscription(self, name: str) -> None: ...


class HandshakeFailed(SubscriptionError):
    """The webhook did not prove it wants the events: nothing was created."""


class EventGrid:
    """Subscriptions and deliveries over one ledger."""

    def __init__(
        self,
        ledger: Ledger,
        *,
        time_scale: float = 1.0,
        leading: Callable[[], bool] = lambda: True,
        timeout: float = 10.0,
        history: HistoryWriter | None = None,
        keeper: SubscriptionKeeper | None = None,
        destinations: Destinations | None = None,
    ) -> None:
        self.ledger = ledger
        self.topic = ledger.names.topic
        self.time_scale = time_scale
        self.leading = leading
        self.timeout = timeout
        self.log = DeliveryLog()
        self.history = history
        self.keeper = keeper
        self.destinations = destinations or Destinations()  # loopback unless allowed
        self.pending = PendingNotices(keeper)
        self._unwritten: list[Attempt] = []
        if history is not None:
            self.log.on_add = self._remember
        self.validation_url = "http://127.0.0.1/api/v1/eventgrid/validate"
        self._subs: dict[str, Subscriber] = {}
        self._slots = Slots(MAX_SUBSCRIPTIONS)
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None
        #: True once ``resume`` took over the outbox: notices are taken as published.
        self._taking = keeper is None
        #: While ``resume`` reads the outbox: the notices published meanwhile, by id.
        self._collecting: dict[str, Notice] | None = None
        ledger.listen(self._notice)

    # -------------------------------------------------------------- subscriptions

    def subscriptions(self) -> list[Subscription]:
        return [s.sub for s in self._subs.values()]

    def get(self, name: str) -> Subscription | None:
        found = self._subs.get(name.lower())
        return None if found is None else found.sub

    async def create(self, spec: SubscriptionSpec, *, replace: bool = False) -> Subscription:
        """Run the handshake, then keep the subscription (``HandshakeFailed``: kept not)."""
        key = spec.name.lower()
        with self._slots.reserve(key, self._subs, replace=replace):  # before any await
            try:  # refused without a request to it: the refusal tells nothing of its ports
                await self.destinations.check_url(spec.endpoint)
            except DestinationRefused as exc:
                raise HandshakeFailed(str(exc)) from None
            client = self._http()
            outcome = await handshake(
                client, spec, self.topic, f"{self.validation_url}/{spec.name}",
                self.ledger.now(),
            )  # fmt: skip
            if outcome.state == "Failed":
                raise HandshakeFailed(outcome.reason)
            sub = Subscription(spec, outcome.state, outcome.reason, outcome.code)
            await self._keep(sub)  # kept before it is served: a refusal changes nothing
            old = self._subs.pop(key, None)
            queued: list[Pending] = []
            if old is not None:
                await old.close()
                queued = old.queued()  # a replaced subscription keeps what it had to deliver
            self._start(sub, queued)
        return sub

    async def resume(self, *, queued: bool | None = None) -> int:
        """Deliver to the subscriptions the store keeps, and to no other (at start, and
        in a scaled-out fleet each time this process takes the lead: its own copy may
        predate what the last leader created or deleted). A kept one that cannot be read
        is skipped, logged; returns how many there are.

        With ``queued`` (by default: when this process leads), the notices kept as not
        yet delivered are queued again, each with its attempts and due time (the store's
        are the truth: the last leader may have delivered some); those of subscriptions
        no longer kept are forgotten. Then the notices the outbox holds, and those
        published while it was read, are taken over: handed to the subscribers."""
        if self.keeper is None:
            return 0
        requeue = self.leading() if queued is None else queued
        self._bind()
        if requeue:
            self._collecting = {}  # published from now on: taken with the outbox's
        try:
            return await self._resume(self.keeper, requeue)
        finally:
            self._collecting = None

    async def _resume(self, keeper: SubscriptionKeeper, requeue: bool) -> int:
        await self.pending.written()  # what this process told the store is in it
        try:
            kept = await asyncio.to_thread(keeper.eventgrid_subscriptions)
        except StoreUnavailable as exc:  # the outbox keeps the notices for the next try
            log.warning("Event Grid subscriptions not resumed: %s", exc)
            return 0
        waiting = await self.pending.load() if requeue else None
        owed = await self.pending.owed() if requeue else None
        restored: list[Subscription] = []
        for body in kept[:MAX_SUBSCRIPTIONS]:
            try:
                restored.append(Subscription.restored(body))
            except ValueError as exc:
                log.warning("an Event Grid subscription left out: %s", exc)
        names = {sub.spec.name.lower() for sub in restored}
        for name in [n for n in self._subs if n not in names]:
            await self._subs.pop(name).close()
        for sub in restored:
            key = sub.spec.name.lower()
            old = self._subs.pop(key, None)
            carried: list[Pending] = []
            if old is not None:
                await old.close()
                carried = old.queued()
            self._start(sub, carried if waiting is None else waiting.pop(key, []))
        for name, entries in (waiting or {}).items():  # a deleted subscription's
            for entry in entries:
                self.pending.settled(name, entry.notice.id)
        if requeue:
            collected = self._collecting or {}
            self._collecting = None
            self._taking = True
            for notice in {n.id: n for n in (*(owed or ()), *collected.values())}.values():
                self._offer(notice)
        return len(self._subs)

    def _start(self, sub: Subscription, queued: list[Pending]) -> None:
        subscriber = Subscriber(
            sub, self._http(), self.log, topic=self.topic, now=self.ledger.now,
            time_scale=self.time_scale, keeping=self.pending, leading=self.leading,
        )  # fmt: skip
        subscriber.restore(queued)
        subscriber.start()
        self._subs[sub.spec.name.lower()] = subscriber

    async def _keep(self, sub: Subscription) -> None:
        if self.keeper is not None:
            await asyncio.to_thread(self.keeper.save_eventgrid_subscription, sub.spec.name,
                                    sub.kept())  # fmt: skip

    async def validate(self, name: str, code: str) -> bool:
        """A GET of the validationUrl finishes a manual handshake (kept: a restart
        delivers to it too)."""
        found = self._subs.get(name.lower())
        if found is None or found.sub.state != "AwaitingManualAction":
            return False
        if not code or code != found.sub.validation_code:
            return False
        done = Subscription(found.sub.spec, "Succeeded", "", found.sub.validation_code)
        await self._keep(done)
        found.sub.state, found.sub.reason = "Succeeded", ""
        return True

    async def delete(self, name: str) -> bool:
        """Forget a subscription and the notices it had yet to deliver (no batch of
        pending notices written meanwhile brings them back)."""
        found = self._subs.get(name.lower())
        if found is None:
            return False
        async with self.pending.lock:
            if self.keeper is not None:
                await asyncio.to_thread(self.keeper.delete_eventgrid_subscription, name)
            self._subs.pop(name.lower(), None)
            await found.close()
            self.pending.forget(name)
        return True

    async def close(self) -> None:
        """Stop delivering; the notices not yet delivered stay kept for the next start."""
        for subscriber in list(self._subs.values()):
            await subscriber.close()
        self._subs.clear()
        await self.pending.written()
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # ------------------------------------------------------------------- notices

    def _bind(self) -> None:
        """Notices published on another thread come to this (the event loop's) one."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            self._thread = threading.get_ident()

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._bind()
            limits = httpx.Limits(max_connections=MAX_SUBSCRIPTIONS * 2)
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout, connect=min(5.0, self.timeout)),
                transport=GuardedTransport(
                    self.destinations, httpx.AsyncHTTPTransport(limits=limits)
                ),
                follow_redirects=False,
                trust_env=False,
            )
        return self._client

    def _notice(self, notice: Notice) -> None:
        if not self.leading():  # the leader takes it (or the next one, from the outbox)
            return
        if self._loop is not None and threading.get_ident() != self._thread:
            self._loop.call_soon_threadsafe(self._take, notice)
        else:
            self._take(notice)

    def _take(self, notice: Notice) -> None:
        if self._collecting is not None:
            self._collecting[notice.id] = notice
        elif self._taking:
            self._offer(notice)
        # else: not resumed yet; the outbox keeps it for ``resume``

    def _remember(self, attempt: Attempt) -> None:
        """Queue an attempt for the history (on the event loop): one write per turn."""
        self._unwritten.append(attempt)
        if len(self._unwritten) == 1:
            asyncio.get_running_loop().call_soon(self._write_history)

    def _write_history(self) -> None:
        batch, self._unwritten = self._unwritten, []
        if self.history is None or not batch:
            return
        try:
            self.history(HISTORY_KIND, [a.history() for a in batch])
        except Exception as exc:  # the store refuses writes: deliveries go on regardless
            log.warning("%d Event Grid deliveries left out of the history: %s", len(batch), exc)

    def _offer(self, notice: Notice) -> None:
        """Hand a notice to each subscriber that wants it; the batch that keeps it
        pending for them deletes it from the outbox."""
        for subscriber in list(self._subs.values()):
            if subscriber.sub.state == "Succeeded" and subscriber.sub.spec.wants(notice.arm_id):
                subscriber.offer(notice)
        self.pending.taken(notice.id)
