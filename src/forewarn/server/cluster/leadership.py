"""One process of a scaled-out fleet: follower until elected, then the fleet's writer.

Every process starts as a follower: its fabric writes nothing, serves the views it
replicates from the change log (``replication.py``) and relays what VMs ask of it
(``relay.py``). Each process also tries, every half second, to take the PostgreSQL
advisory lock on a session of its own; the one that holds it leads:

1. it stops replicating and takes over the ``leader`` row (a new epoch: from then on a
   write of any former leader fails, so two writers can never interleave),
2. reloads the whole state from the database (everything the previous leader made
   durable, nothing else) and becomes the fabric's writer (a threaded journal, fenced
   with its epoch),
3. runs the scheduler and applies the requests followers relayed, until its session
   ends or another epoch shows up; then it steps down and follows again.

A leader that dies ends its session, which frees the lock: another process takes over
within a second or so, and timers that came due meanwhile fire at once, in order.

A process that stopped for a while (SIGSTOP, a paused VM, a partition from the database)
wakes up not knowing whether it still leads, or how far its views fell behind. Its
``Standing`` (``forewarn.fabric.standing``) is confirmed each time the database vouches
for it (a leader's check that it still leads, which also reports it alive; a follower's
catch-up or reload) and lapses ``STANDING_SECONDS`` later, before any follower could
depose it: from then on it fires no timer, writes nothing and answers no VM from its
views until it is confirmed again or has stepped down and reloaded. Stepping down stops
the leader's work first and waits for its tasks a bounded time, never counting on a
cancellation being delivered.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import structlog

from forewarn.fabric import Changes, Clock, Fabric, Scheduler, StoreUnavailable
from forewarn.server.cluster.metrics import ClusterMetrics
from forewarn.server.cluster.postgres_relay import (
    PostgresRelay,
    apply_in_time,
    apply_requests,
)
from forewarn.server.cluster.replication import Replicator, close_later
from forewarn.store import StoreError, ThreadedJournal
from forewarn.store.postgres import PostgresStore
from forewarn.store.postgres_cluster import (
    PENDING_LIMIT,
    REQUESTS_CHANNEL,
    ChangeFeed,
    ClusterTables,
    LeaderSession,
    Member,
)

__all__ = ["Cluster", "ClusterStatus"]

log = structlog.get_logger("forewarn")

#: How often a follower tries the lock, and a leader checks it still leads.
ELECTION_SECONDS = 0.5
#: How often each process reports itself in ``members``.
HEARTBEAT_SECONDS = 1.0
#: The change log keeps at least this many entries, and anything younger than this.
LOG_KEEP_ROWS = 10_000
LOG_KEEP_SECONDS = 600.0
PRUNE_SECONDS = 60.0
#: A leader not heard from for this long is deposed (its sessions ended) by a follower.
STALE_LEADER_SECONDS = 5.0
#: The longest a request waits for a connection to read who leads (the control API
#: answers 503 after that, rather than hold its caller while the database is away).
LOOKUP_SECONDS = 1.0
#: How long after the database last vouched for it a process serves and writes (well
#: under ``STALE_LEADER_SECONDS``: a leader stops before anyone may depose it).
STANDING_SECONDS = 2.5
#: How long stepping down waits for each round of cancelled leader tasks to end.
STEP_DOWN_SECONDS = 1.0


@dataclass(frozen=True)
class ClusterStatus:
    """What ``GET /api/v1/cluster`` and ``forewarn status`` show."""

    member: str
    role: str
    epoch: int | None
    applied_seq: int
    lag_seconds: float | None
    leader: dict[str, Any]
    members: list[Member]


class Cluster:
    """Leadership, replication and relayed requests of one process."""

    def __init__(
        self,
        fabric: Fabric,
        store: PostgresStore,
        clock: Clock,
        *,
        control_url: str | None,
        metrics: ClusterMetrics,
        on_written: Callable[[Sequence[Changes]], None] | None = None,
        on_lead: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        """``on_lead`` runs each time this process takes the lead, before it changes the
        fleet or is asked to (what it keeps beside the fleet, read again from the store:
        a follower's copy may be older than the leader it replaces)."""
        self.fabric = fabric
        self.store = store
        self.clock = clock
        self.tables = ClusterTables(store)
        self.control_url = control_url
        self.member = store.member
        self.started_at = time.time()
        self.metrics = metrics
        self._on_written = on_written
        self._on_lead = on_lead
        self.relay = PostgresRelay(self.tables, self.member)
        #: Woken when a request finds the standing lapsed: a leader checks at once.
        self._recheck = asyncio.Event()
        fabric.standing.require(STANDING_SECONDS, on_lapse=self._recheck.set)
        self.replicator = Replicator(
            fabric, store, on_lag=metrics.observe_lag, on_reload=metrics.reloads.inc,
            on_current=fabric.standing.confirm,
        )  # fmt: skip
        #: The leader's checks that it still leads, on a thread of their own: never behind
        #: other work in the loop's executor while its standing runs out.
        self._lease_thread = ThreadPoolExecutor(1, thread_name_prefix="forewarn-lease")
        self.epoch: int | None = None
        self._scheduler = Scheduler(fabric, clock)
        #: One pass over the followers' requests at a time (the request loop's, and the
        #: scheduler's before a timer: ``Fabric.apply_relayed_first``).
        self._applying = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._leader_tasks: list[asyncio.Task[None]] = []
        self._following: asyncio.Task[None] | None = None
        self._journal: ThreadedJournal | None = None
        self._leader_cache: tuple[float, str | None] = (0.0, None)
        self._last_stale_check = 0.0
        self._stopping = False
        #: How a follower reaches the leader's control API (``forwarding.py``): made here,
        #: at start-up, because making one (its TLS context) holds the loop some 40 ms.
        self.leader_http = httpx.AsyncClient(timeout=30.0, trust_env=False)
        fabric.follow(self.relay)

    # ------------------------------------------------------------------ state

    @property
    def leading(self) -> bool:
        """True while this process is the fleet's writer."""
        return self.epoch is not None and self.fabric.leading

    @property
    def applied(self) -> int:
        """The last change this process's views include."""
        return self.store.head if self.leading else self.replicator.applied

    def healthy(self) -> bool:
        """False while a follower's change feed is down (its views go stale), from the
        moment a leader finds it no longer leads (until it follows again), and while the
        database has not vouched for this process lately (its ``Standing``)."""
        return self.fabric.standing.current() and (self.leading or self.replicator.connected)

    def lag(self) -> float | None:
        """Commit-to-view time of the last change applied (0 on the leader)."""
        return 0.0 if self.leading else self.replicator.last_lag

    async def leader_url(self) -> str | None:
        """The leader's control URL (from the ``leader`` row, cached for a moment)."""
        if self.leading:
            return self.control_url
        at, url = self._leader_cache
        if url is not None and time.monotonic() - at < 1.0:
            return url
        row = await asyncio.to_thread(self.tables.leader, LOOKUP_SECONDS)
        self._leader_cache = (time.monotonic(), row.control_url)
        return row.control_url

    def forget_leader(self) -> None:
        """Read the leader row again on the next ``leader_url`` (the leader went away)."""
        self._leader_cache = (0.0, None)

    async def wait_applied(self, seq: int, timeout: float) -> bool:
        """Wait until this process's views include change ``seq``."""
        if self.leading or self.replicator.applied >= seq:
            return True
        return await self.replicator.wait_applied(seq, timeout)

    async def status(self) -> ClusterStatus:
        """This process and the fleet, from the database (``StoreUnavailable`` when it
        cannot be read within about a second)."""
        row = await asyncio.to_thread(self.tables.leader, LOOKUP_SECONDS)
        members = await asyncio.to_thread(self.tables.members, 10.0, LOOKUP_SECONDS)
        return ClusterStatus(
            member=self.member,
            role="leader" if self.leading else "follower",
            epoch=self.epoch,
            applied_seq=self.applied,
            lag_seconds=self.lag(),
            leader={
                "member": row.holder, "epoch": row.epoch, "control_url": row.control_url,
                "since": row.since, "head": row.head,
            },
            members=members,
        )  # fmt: skip

    # ------------------------------------------------------------------- run

    def start(self) -> None:
        """Start following, electing and reporting (on the running loop)."""
        # httpx's first request loads anyio's asyncio backend (some 20 ms of imports on the
        # loop): now, at start-up, rather than when a follower first forwards a change.
        anyio.get_cancelled_exc_class()
        self._following = asyncio.create_task(self.replicator.run(reload_first=False))
        self._tasks = [
            asyncio.create_task(self._elect(), name="forewarn-election"),
            asyncio.create_task(self._heartbeat(), name="forewarn-heartbeat"),
        ]

    async def stop(self) -> None:
        """Stop every task; a leader writes what it accepted and frees the lock."""
        self._stopping = True
        for task in [*self._tasks, *self._leader_tasks]:
            task.cancel()
        if self._following is not None:
            self._following.cancel()
        everything = [*self._tasks, *self._leader_tasks]
        if self._following is not None:
            everything.append(self._following)
        for task in everything:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.leading:
            with contextlib.suppress(StoreUnavailable):
                await self.fabric.durable()
        if self._journal is not None:
            await asyncio.to_thread(self._journal.close)
        with contextlib.suppress(StoreUnavailable):
            await asyncio.to_thread(self.tables.leave, self.member)
        await self.leader_http.aclose()
        self._lease_thread.shutdown(wait=False)

    async def _elect(self) -> None:
        session = LeaderSession(self.store.url, self.store.session_name)
        try:
            while True:
                try:
                    won = await asyncio.to_thread(session.try_lock)
                except StoreUnavailable as exc:
                    log.warning("leader election failed; retrying", reason=str(exc))
                    won = False
                if not won:
                    await self._depose_if_frozen()
                else:
                    try:
                        await self._lead(session)
                    except (StoreUnavailable, StoreError) as exc:
                        log.warning("leading the fleet failed", reason=str(exc))
                    except Exception:
                        log.exception("leading the fleet failed")
                    finally:
                        await self._step_down(session)
                await asyncio.sleep(ELECTION_SECONDS)
        finally:
            session.close()

    async def _depose_if_frozen(self) -> None:
        """A leader that stopped reporting (SIGSTOP, a machine that froze) still holds
        the lock, its session kept alive by its kernel: end its sessions, so that this
        process or another can take over; its writes are fenced by the new epoch."""
        now = time.monotonic()
        if now - self._last_stale_check < HEARTBEAT_SECONDS:
            return
        self._last_stale_check = now
        try:
            deposed = await asyncio.to_thread(self.tables.depose_stale_leader, STALE_LEADER_SECONDS)
        except StoreUnavailable as exc:
            log.warning("checking the leader's heartbeat failed", reason=str(exc))
            return
        if deposed is not None:
            log.warning(
                "the leader stopped reporting; its sessions were ended",
                leader=deposed, silent_for=f">{STALE_LEADER_SECONDS:g} s",
            )  # fmt: skip

    async def _lead(self, session: LeaderSession) -> None:
        if self._following is not None:
            self._following.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._following
            self._following = None
        asked = time.monotonic()
        epoch = await asyncio.to_thread(session.take_over, self.member, self.control_url)
        self.store.fence(epoch)
        if self._on_lead is not None:  # before anything can change or be asked of it
            await self._on_lead()
        snapshot = await asyncio.to_thread(self.store.load)
        position = await asyncio.to_thread(self.store.clock_position)
        read_at = self.clock.now()
        waiting, _ = await asyncio.to_thread(self.tables.pending)
        self._journal = ThreadedJournal(self.store, on_written=self._on_written)
        self.fabric.lead(snapshot, self._journal, clock_position=position)
        self.fabric.apply_relayed_first(self._apply_relayed)
        self.fabric.standing.confirm(asked)  # (a load slower than the standing: checked next)
        self.epoch = epoch
        self.metrics.became_leader(epoch)
        log.info("leading the fleet", epoch=epoch, log_head=self.store.head, member=self.member)
        # approvals accepted while nobody led, each before the timers due after it, then
        # the timers that came due meanwhile: no await from ``lead`` on (a reader's
        # catch-up would fire the timers first)
        apply_in_time(self.fabric, waiting)
        if len(waiting) < PENDING_LIMIT:
            self.fabric.relayed_applied(read_at)
        self.fabric.run_due()
        self._leader_tasks = [
            asyncio.create_task(self._scheduler.run(), name="forewarn-scheduler"),
            asyncio.create_task(self._consume_requests(), name="forewarn-requests"),
            asyncio.create_task(self._prune(), name="forewarn-prune"),
        ]
        loop = asyncio.get_running_loop()
        while True:
            asked = time.monotonic()
            if not await loop.run_in_executor(
                self._lease_thread, session.still_leads, epoch, self.member
            ):
                break
            self.fabric.standing.confirm(asked)
            self._recheck.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(ELECTION_SECONDS):  # (or a lapse found sooner)
                    await self._recheck.wait()
        if not self._stopping:
            log.warning("no longer leading the fleet", epoch=epoch)

    async def _step_down(self, session: LeaderSession) -> None:
        was_leading = self.epoch is not None
        # First, in this very turn of the loop, stop acting as the leader: not the leader
        # from now on (/healthz and forwarding say so), no timer fires, nothing is written
        # and no VM is answered from the leader's views until they are reloaded.
        self.epoch = None
        self.fabric.standing.withdraw()
        self._scheduler.stop()
        self.fabric.follow(self.relay)
        await _end(self._leader_tasks)
        self._leader_tasks = []
        if self._journal is not None:
            await asyncio.to_thread(self._journal.close)  # fails (fenced) or lands
            await asyncio.sleep(0)  # its outcomes are reported on this loop
            self._journal = None
        session.close()  # frees the lock, if this session still held it
        self.metrics.became_follower()
        if self._stopping:
            return
        if self._following is None:
            self._following = asyncio.create_task(self.replicator.run(reload_first=True))
        if was_leading:
            log.info("following the fleet's leader again", member=self.member)

    async def _apply_relayed(self) -> int:
        async with self._applying:
            return await apply_requests(self.fabric, self.tables)

    async def _consume_requests(self) -> None:
        feed: ChangeFeed | None = None
        while True:
            try:
                if feed is None:
                    feed = await asyncio.to_thread(
                        ChangeFeed, self.store.url, REQUESTS_CHANNEL, self.store.session_name
                    )
                handled = await self._apply_relayed()
                self.metrics.applied_requests.inc(handled)
                if not handled:
                    await asyncio.to_thread(feed.wait, 1.0)
            except asyncio.CancelledError:
                if feed is not None:
                    close_later(feed)
                raise
            except Exception as exc:  # never stop applying requests for good
                if isinstance(exc, StoreUnavailable | StoreError):
                    log.warning("applying relayed requests failed; retrying", reason=str(exc))
                else:
                    log.exception("applying relayed requests failed; retrying")
                if feed is not None:
                    feed.close()
                    feed = None
                await asyncio.sleep(1.0)

    async def _prune(self) -> None:
        while True:
            await asyncio.sleep(PRUNE_SECONDS)
            try:
                await asyncio.to_thread(self.tables.prune_log, LOG_KEEP_SECONDS, LOG_KEEP_ROWS)
            except StoreUnavailable as exc:
                log.warning("pruning the change log failed", reason=str(exc))

    async def _heartbeat(self) -> None:
        while True:
            role = "leader" if self.leading else "follower"
            self.metrics.set_position(self.applied, self.lag(), self.replicator.connected)
            try:
                await asyncio.to_thread(
                    self.tables.heartbeat, self.member, self.control_url, role, self.applied,
                    self.lag(), self.started_at,
                )  # fmt: skip
                members = await asyncio.to_thread(self.tables.members)
                self.metrics.set_members(members)
            except StoreUnavailable as exc:
                log.warning("reporting this process failed", reason=str(exc))
            except Exception:  # reporting must never stop for good
                log.exception("reporting this process failed")
            await asyncio.sleep(HEARTBEAT_SECONDS)


async def _end(tasks: Sequence[asyncio.Task[None]]) -> None:
    """Cancel ``tasks`` and wait for them to end, a bounded time: a cancellation that
    does not land (Python 3.11's ``wait_for`` can drop one, and ``Scheduler.stop`` is
    not the only loop that uses it) is sent again, and a task still running after three
    rounds is named in the log and left behind, never waited for for ever."""
    pending = {t for t in tasks if not t.done()}
    for _ in range(3):
        if not pending:
            break
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=STEP_DOWN_SECONDS)
    for task in tasks:  # retrieve what they ended with (nothing is awaited any more)
        if task.done() and not task.cancelled() and task.exception() is not None:
            log.warning(
                "a leader task had failed", task=task.get_name(), reason=repr(task.exception())
            )
    if pending:
        log.error("leader tasks did not end when cancelled; left behind",
                  tasks=sorted(t.get_name() for t in pending))  # fmt: skip
