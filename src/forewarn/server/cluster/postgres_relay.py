"""A follower's requests on their way to the leader, through PostgreSQL.

``PostgresRelay`` is the fabric's ``Relay`` on a follower: an approval the endpoint has
validated is inserted into ``approval_requests`` (and NOTIFYed) off the event loop, and
the VM is answered 200 only once that insert is committed (``settled``). A scope's
requests are coalesced per scope and upserted in the background (bookkeeping: a failure
is retried, never reported to a VM).

``apply_requests`` is the leader's side: it applies every pending request to its fabric,
waits until the resulting changes are durable, then deletes the requests. A crash in
between applies them again after the takeover, which changes nothing: approving an
approved, started or finished event is a no-op. A new leader first applies the
approvals that waited while nobody led as of when they were accepted (``apply_in_time``),
so that a NotBefore that passed meanwhile does not swallow one made before it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TypeVar

import structlog

from forewarn.fabric import Fabric, FabricError, StoreUnavailable
from forewarn.fleet import UnknownName
from forewarn.store.postgres_cluster import (
    PENDING_LIMIT,
    ApprovalRequest,
    ClusterTables,
    ScopeRequest,
    keep_newest,
)

__all__ = ["PostgresRelay", "apply_in_time", "apply_requests"]

log = structlog.get_logger("forewarn")

T = TypeVar("T")

#: After a failed bookkeeping write, the next try waits this long.
RETRY_SECONDS = 1.0
#: Relayed requests the leader applies between two turns of its event loop: a fleet
#: arriving at a follower relays a first request per scope, thousands at once, and
#: applying them in one go held every poll to the leader behind them.
SLICE = 256


class PostgresRelay:
    """The fabric's ``Relay`` on a follower."""

    def __init__(self, tables: ClusterTables, front_end: str) -> None:
        self._tables = tables
        self._front_end = front_end
        self._pending: list[asyncio.Future[int]] = []
        self._scopes: dict[str, ScopeRequest] = {}
        self._flushing: asyncio.Task[None] | None = None
        self.relayed = 0

    def approve(self, vm: str, event_ids: Sequence[str], at: float) -> None:
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(
            None, self._tables.record_approval, vm, list(event_ids), self._front_end, at
        )
        future.add_done_callback(_retrieve)
        self._pending.append(future)
        self.relayed += 1

    def pending(self) -> int:
        return sum(1 for f in self._pending if not f.done())

    async def settled(self) -> None:
        waiting = list(self._pending)
        if not waiting:
            return
        results = await asyncio.gather(*waiting, return_exceptions=True)
        self._pending = [f for f in self._pending if f not in waiting]
        for result in results:
            if isinstance(result, StoreUnavailable):
                raise result
            if isinstance(result, BaseException):
                log.error("recording an approval failed", exc_info=result)
                raise StoreUnavailable(f"the approval could not be recorded: {result!r}")

    def note_request(self, scope_id: str, vm: str, at: float) -> None:
        self._scopes[scope_id] = ScopeRequest(scope_id, vm, at)
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        while self._scopes:
            batch = list(self._scopes.values())
            self._scopes.clear()
            try:
                await asyncio.to_thread(self._tables.record_scope_requests, batch)
            except StoreUnavailable as exc:
                log.warning("passing requests on to the leader failed; retrying", reason=str(exc))
                keep_newest(self._scopes, batch)  # (newer ones may have come meanwhile)
                await asyncio.sleep(RETRY_SECONDS)


@contextlib.contextmanager
def _skipped_if_refused(what: str, subject: str) -> Iterator[None]:
    """A request the platform refuses (a bug, or a request from an older version) is
    logged and dropped: it must never hold up the ones behind it. A store that cannot
    write stops the whole round (retried later)."""
    try:
        yield
    except StoreUnavailable:
        raise
    except (FabricError, UnknownName) as exc:
        log.warning(f"{what} was refused; dropped", subject=subject, reason=str(exc))


async def _slices(items: Sequence[T]) -> AsyncIterator[Sequence[T]]:
    """``items`` by ``SLICE``, with a turn of the event loop (the VMs' polls) between."""
    for start in range(0, len(items), SLICE):
        if start:
            await asyncio.sleep(0)
        yield items[start : start + SLICE]


def _note_scopes(fabric: Fabric, batch: Sequence[ScopeRequest]) -> None:
    """Apply a slice of relayed scope requests in one transition; if the platform refuses
    it, one at a time, so that only the refused request is dropped (and named)."""
    try:
        fabric.note_relayed_requests((s.scope_id, s.vm, s.at) for s in batch)
    except (FabricError, UnknownName):
        for request in batch:
            with _skipped_if_refused("a relayed request", request.scope_id):
                fabric.note_relayed_requests([(request.scope_id, request.vm, request.at)])


def _retrieve(future: asyncio.Future[int]) -> None:
    """Mark a failure as seen (``settled`` reports it; nobody may ever ask)."""
    if not future.cancelled():
        future.exception()


def _made(approval: ApprovalRequest) -> tuple[float, int]:
    return (approval.at, approval.id)


def apply_in_time(fabric: Fabric, approvals: Sequence[ApprovalRequest]) -> None:
    """A new leader's first step, before it fires the timers that came due while nobody
    led: each approval accepted meanwhile, as of when it was accepted (the timers due
    before it fire first). ``apply_requests`` deletes them later (applying an approval
    again changes nothing)."""
    for approval in sorted(approvals, key=_made):
        with _skipped_if_refused("a relayed approval", approval.vm):
            fabric.approve_relayed(approval.vm, approval.event_ids, at=approval.at)


async def apply_requests(fabric: Fabric, tables: ClusterTables) -> int:
    """The leader applies the pending relayed requests; returns how many it handled.

    Approvals are applied as of when they were made (``apply_in_time``): the leader may
    have read one after its NotBefore came due. Requests are deleted only once what they
    changed is durable; then the fabric's timers may fire up to when they were read
    (``Fabric.relayed_applied``).
    """
    read_at = fabric.clock.now()
    approvals, scopes = await asyncio.to_thread(tables.pending)
    if approvals or scopes:
        async for batch in _slices(scopes):
            _note_scopes(fabric, batch)
        async for approvals_batch in _slices(sorted(approvals, key=_made)):
            apply_in_time(fabric, approvals_batch)
        await fabric.durable()
        await asyncio.to_thread(tables.done, [a.id for a in approvals], scopes)
    if len(approvals) < PENDING_LIMIT:  # (else more wait: not all read by then)
        fabric.relayed_applied(read_at)
    return len(approvals) + len(scopes)
