"""The scale-out tables of the PostgreSQL store: leadership, change feed, relayed requests.

Every function here is blocking (psycopg's synchronous API); the server calls them off
its event loop. ``LeaderSession`` holds the advisory lock that elects the leader on a
connection of its own (the lock ends with that session: a leader that dies, or whose
connection drops, frees it at once). ``ChangeFeed`` LISTENs on another connection and
reads the change log. The rest (relayed approvals and requests, member heartbeats) goes
through the store's pool.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import psycopg
import psycopg_pool
from psycopg import conninfo

from forewarn.fabric import Changes, StoreUnavailable
from forewarn.store.postgres import (
    APPLICATION_PREFIX,
    CHANGES_CHANNEL,
    WRITE_TIMEOUT,
    Deposed,
    PostgresStore,
)
from forewarn.store.postgres_schema import LEADER_LOCK, display_url

__all__ = [
    "PENDING_LIMIT",
    "REQUESTS_CHANNEL",
    "ApprovalRequest",
    "ChangeFeed",
    "ClusterTables",
    "LeaderRow",
    "LeaderSession",
    "LogEntry",
    "Member",
    "ScopeRequest",
    "keep_newest",
]

#: NOTIFY channel of relayed approvals (payload: the request id).
REQUESTS_CHANNEL = "forewarn_requests"
#: Seconds a follower waits for a pooled connection to record a VM's approval: with the
#: database away, the VM is told (503) within about a second, not the writer's 5 s. (Its
#: threads outnumber the pool's connections by two, so a burst of approvals waits in the
#: executor, not here.)
RELAY_WAIT = 1.0
#: Relayed approvals the leader reads at a time (``ClusterTables.pending``).
PENDING_LIMIT = 1000

_DECODE_LOG = msgspec.msgpack.Decoder(Changes)

#: TCP keepalives on long-lived sessions: a vanished peer is noticed within ~15 s.
_KEEPALIVES = {"keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 2,
               "keepalives_count": 3}  # fmt: skip


def _unavailable(where: str, exc: BaseException) -> StoreUnavailable:
    text = str(exc).strip()
    reason = text.splitlines()[0] if text else type(exc).__name__
    return StoreUnavailable(f"database {where}: {reason}")


def _session(url: str, name: str | None = None) -> psycopg.Connection[tuple[Any, ...]]:
    """A connection of its own (``name``: its ``application_name``)."""
    where = display_url(url)
    named = {} if name is None else {"application_name": name}
    try:
        info = conninfo.make_conninfo(url, connect_timeout=5, **_KEEPALIVES, **named)
        conn = psycopg.connect(info, autocommit=True)
        # The server drops a dead client's session (and its lock) as soon, too.
        conn.execute("SET tcp_keepalives_idle = 5")
        conn.execute("SET tcp_keepalives_interval = 2")
        conn.execute("SET tcp_keepalives_count = 3")
    except psycopg.Error as exc:
        raise _unavailable(where, exc) from None
    return conn


@dataclass(frozen=True, slots=True)
class LeaderRow:
    """Who leads: epoch (incremented by every takeover), log head, holder, control URL."""

    epoch: int
    head: int
    holder: str | None
    control_url: str | None
    since: float | None


class LeaderSession:
    """The session whose advisory lock makes its process the leader."""

    def __init__(self, url: str, name: str | None = None) -> None:
        self.url = url
        self.name = name
        self.where = display_url(url)
        self._conn: psycopg.Connection[tuple[Any, ...]] | None = None

    def try_lock(self) -> bool:
        """True when this session holds (or just took) the leader lock."""
        try:
            if self._conn is None or self._conn.closed:
                self._conn = _session(self.url, self.name)
            row = self._conn.execute("SELECT pg_try_advisory_lock(%s)", (LEADER_LOCK,)).fetchone()
        except psycopg.Error as exc:
            self.close()
            raise _unavailable(self.where, exc) from None
        return bool(row and row[0])

    def take_over(self, holder: str, control_url: str | None) -> int:
        """Become the leader of record: a new epoch (fencing every older writer, once
        their transaction in flight ends); returns it."""
        assert self._conn is not None
        try:
            row = self._conn.execute(
                "UPDATE leader SET epoch = epoch + 1, holder = %s, control_url = %s,"
                " since = now() WHERE id = 1 RETURNING epoch",
                (holder, control_url),
            ).fetchone()
        except psycopg.Error as exc:
            self.close()
            raise _unavailable(self.where, exc) from None
        assert row is not None
        return int(row[0])

    def still_leads(self, epoch: int, member: str | None = None) -> bool:
        """False once the session is gone or another process took over. ``member``: also
        report it alive (as ``ClusterTables.heartbeat``), in the same round trip, so that
        no follower can find it silent for ``STALE_LEADER_SECONDS`` after this call
        began (the leader's ``Standing`` counts on that)."""
        if self._conn is None or self._conn.closed:
            return False
        try:
            row = self._conn.execute(
                "WITH beat AS (UPDATE members SET seen_at = now() WHERE id = %s)"
                " SELECT epoch FROM leader WHERE id = 1",
                (member,),
            ).fetchone()
        except psycopg.Error:
            self.close()
            return False
        return row is not None and int(row[0]) == epoch

    def close(self) -> None:
        """End the session (which releases the lock)."""
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                if not self._conn.closed:  # released now, not when the backend notices
                    self._conn.execute("SELECT pg_advisory_unlock_all()")
                self._conn.close()
            self._conn = None


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One committed change: its sequence number, commit time (database clock)."""

    seq: int
    committed_at: float
    changes: Changes


class ChangeFeed:
    """LISTENs for new changes (or relayed requests), and reads the change log."""

    def __init__(self, url: str, channel: str = CHANGES_CHANNEL, name: str | None = None) -> None:
        self.where = display_url(url)
        self._conn = _session(url, name)
        try:
            self._conn.execute(f"LISTEN {channel}")
        except psycopg.Error as exc:
            self.close()
            raise _unavailable(self.where, exc) from None

    def wait(self, timeout: float) -> set[str]:
        """The channels notified, waiting at most ``timeout`` s for the first one."""
        channels: set[str] = set()
        try:
            for notify in self._conn.notifies(timeout=timeout, stop_after=1):
                channels.add(notify.channel)
        except psycopg.Error as exc:
            raise _unavailable(self.where, exc) from None
        return channels

    def since(self, seq: int, limit: int = 2000) -> tuple[list[LogEntry], float, int]:
        """Log entries after ``seq`` (oldest first, at most ``limit``), the database's
        clock when read, and the lowest sequence number still in the log (0: empty)."""
        try:
            rows = self._conn.execute(
                "SELECT seq, committed_at, data FROM changes WHERE seq > %s ORDER BY seq LIMIT %s",
                (seq, limit),
            ).fetchall()
            row = self._conn.execute(
                "SELECT extract(epoch from clock_timestamp())::float8,"
                " coalesce((SELECT min(seq) FROM changes), 0)"
            ).fetchone()
        except psycopg.Error as exc:
            raise _unavailable(self.where, exc) from None
        assert row is not None
        entries = [LogEntry(int(s), float(at), _DECODE_LOG.decode(data)) for s, at, data in rows]
        return entries, float(row[0]), int(row[1])

    def close(self) -> None:
        with contextlib.suppress(psycopg.Error):
            self._conn.close()


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """An approval a follower accepted, for the leader to apply."""

    id: int
    vm: str
    event_ids: tuple[str, ...]
    at: float  # when the follower accepted it, on the fleet's clock


@dataclass(frozen=True, slots=True)
class ScopeRequest:
    """The latest request a follower saw for a scope."""

    scope_id: str
    vm: str
    at: float


def keep_newest(kept: dict[str, ScopeRequest], requests: Iterable[ScopeRequest]) -> None:
    """Merge ``requests`` into ``kept`` (by scope): of a scope's requests, the latest."""
    for request in requests:
        held = kept.get(request.scope_id)
        if held is None or held.at < request.at:
            kept[request.scope_id] = request


@dataclass(frozen=True, slots=True)
class Member:
    """One running process of the fleet, as it last reported itself."""

    id: str
    host: str
    pid: int
    control_url: str | None
    role: str
    applied_seq: int
    lag_seconds: float | None
    started_at: float
    seen_seconds_ago: float


class ClusterTables:
    """Relayed requests, heartbeats and the leader row, through the store's pool."""

    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    @contextlib.contextmanager
    def _tx(self, timeout: float | None = None) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """A pooled connection in a transaction (waiting at most ``timeout`` s for one,
        else the store's write time-out); failures are ``StoreUnavailable``."""
        wait = WRITE_TIMEOUT if timeout is None else timeout
        try:
            with self.store.connection(wait) as conn, conn.transaction():
                yield conn
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise _unavailable(self.store.where, exc) from None

    def _run(
        self, sql: str, args: Sequence[Any] = (), timeout: float | None = None
    ) -> list[tuple[Any, ...]]:
        with self._tx(timeout) as conn:
            cur = conn.execute(sql, args)
            return cur.fetchall() if cur.description else []

    def _read(self, sql: str, args: Sequence[Any], timeout: float | None) -> list[tuple[Any, ...]]:
        """``_run`` for a query that changes nothing, tried twice within one ``timeout``: a
        pooled connection the database ended while it was away fails once, at once (and
        leaves the pool), not every caller after the database is back; a database that
        is away costs the caller ``timeout``, not twice that."""
        deadline = time.monotonic() + (WRITE_TIMEOUT if timeout is None else timeout)
        try:
            return self._run(sql, args, timeout)
        except StoreUnavailable:
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            return self._run(sql, args, left)

    # ---------------------------------------------------------- follower side

    def record_approval(self, vm: str, event_ids: Sequence[str], front_end: str, at: float) -> int:
        """Durably record an approval made at ``at`` (the fleet's clock: the wall clock,
        or where a virtual one stood) for the leader (committed when this returns)."""
        with self._tx(RELAY_WAIT) as conn:
            row = conn.execute(
                "INSERT INTO approval_requests (vm, event_ids, front_end, received_at)"
                " VALUES (%s, %s, %s, %s) RETURNING id",
                (vm, list(event_ids), front_end, at),
            ).fetchone()
            assert row is not None
            conn.execute("SELECT pg_notify(%s, %s)", (REQUESTS_CHANNEL, str(row[0])))
        return int(row[0])

    def record_scope_requests(self, requests: Sequence[ScopeRequest]) -> None:
        """Keep the latest request time per scope (the leader merges them)."""
        if not requests:
            return
        latest: dict[str, ScopeRequest] = {}  # one row per scope: ON CONFLICT needs it
        keep_newest(latest, requests)
        requests = list(latest.values())
        with self._tx() as conn:  # one statement, as in ``done``
            conn.execute(
                "INSERT INTO scope_requests (scope_id, vm, at)"
                " SELECT * FROM unnest(%s::text[], %s::text[], %s::float8[])"
                " ON CONFLICT (scope_id) DO UPDATE SET vm = excluded.vm, at = excluded.at"
                " WHERE scope_requests.at < excluded.at",
                (
                    [r.scope_id for r in requests],
                    [r.vm for r in requests],
                    [r.at for r in requests],
                ),
            )
            conn.execute("SELECT pg_notify(%s, 'scope')", (REQUESTS_CHANNEL,))

    # ------------------------------------------------------------ leader side

    def pending(self) -> tuple[list[ApprovalRequest], list[ScopeRequest]]:
        """Relayed approvals (oldest first) and scope requests waiting for the leader."""
        approvals = [
            ApprovalRequest(int(i), str(vm), tuple(ids), float(at))
            for i, vm, ids, at in self._run(
                "SELECT id, vm, event_ids, received_at FROM approval_requests ORDER BY id LIMIT %s",
                (PENDING_LIMIT,),
            )
        ]
        scopes = [
            ScopeRequest(str(s), str(vm), float(at))
            for s, vm, at in self._run("SELECT scope_id, vm, at FROM scope_requests")
        ]
        return approvals, scopes

    def done(self, approvals: Sequence[int], scopes: Sequence[ScopeRequest]) -> None:
        """Forget requests the leader applied (a scope request only if none came since);
        a store fenced with an epoch forgets nothing once another leader took over
        (``Deposed``): a leader that woke up after it was deposed may have skipped
        requests naming what the new leader made, and they are the new leader's to apply."""
        epoch = self.store.epoch
        with self._tx() as conn:
            if (
                epoch is not None
                and not conn.execute(  # (a takeover waits for this commit)
                    "SELECT 1 FROM leader WHERE id = 1 AND epoch = %s FOR SHARE", (epoch,)
                ).fetchone()
            ):
                raise Deposed(epoch)
            if approvals:
                conn.execute("DELETE FROM approval_requests WHERE id = ANY(%s)", (list(approvals),))
            if scopes:  # one statement: a row at a time held the GIL against the loop
                conn.execute(
                    "DELETE FROM scope_requests AS r USING unnest(%s::text[], %s::float8[])"
                    " AS d(scope_id, at) WHERE r.scope_id = d.scope_id AND r.at <= d.at",
                    ([r.scope_id for r in scopes], [r.at for r in scopes]),
                )

    def prune_log(self, keep_seconds: float, keep_rows: int) -> int:
        """Drop log entries older than ``keep_seconds`` beyond the last ``keep_rows``
        (a follower further behind reloads); returns how many went."""
        rows = self._run(
            "WITH gone AS (DELETE FROM changes WHERE seq <= (SELECT head FROM leader) - %s"
            " AND committed_at < extract(epoch from clock_timestamp()) - %s RETURNING 1)"
            " SELECT count(*) FROM gone",
            (keep_rows, keep_seconds),
        )
        return int(rows[0][0]) if rows else 0

    # ------------------------------------------------------------ everyone

    def leader(self, timeout: float | None = None) -> LeaderRow:
        """The leader row (``StoreUnavailable`` after ``timeout`` s without a connection)."""
        rows = self._read(
            "SELECT epoch, head, holder, control_url, extract(epoch from since)::float8"
            " FROM leader WHERE id = 1",
            (),
            timeout,
        )
        epoch, head, holder, url, since = rows[0]
        return LeaderRow(int(epoch), int(head), holder, url, since)

    def heartbeat(
        self, member_id: str, control_url: str | None, role: str, applied: int,
        lag: float | None, started_at: float,
    ) -> None:  # fmt: skip
        """Report this process (every second or so)."""
        self._run(
            "INSERT INTO members (id, host, pid, control_url, role, applied_seq, lag_seconds,"
            " started_at, seen_at) VALUES (%s, %s, %s, %s, %s, %s, %s, to_timestamp(%s), now())"
            " ON CONFLICT (id) DO UPDATE SET control_url = excluded.control_url,"
            " role = excluded.role, applied_seq = excluded.applied_seq,"
            " lag_seconds = excluded.lag_seconds, seen_at = now()",
            (
                member_id,
                socket.gethostname(),
                os.getpid(),
                control_url,
                role,
                applied,
                lag,
                started_at,
            ),
        )

    def depose_stale_leader(self, stale_seconds: float) -> str | None:
        """End every session of a leader not heard from in ``stale_seconds`` (frozen, or
        cut off): that frees the leader lock, and aborts a write it had in flight, which
        would otherwise hold the leader row. Its later writes fail on the epoch (the new
        leader takes a new one). Returns the member deposed, if any."""
        rows = self._run(
            "SELECT l.holder, count(pg_terminate_backend(a.pid)) FROM leader l"
            " JOIN members m ON m.id = l.holder"
            " JOIN pg_stat_activity a ON a.application_name = left(%s || l.holder, 63)"
            " WHERE l.id = 1 AND m.seen_at < now() - make_interval(secs => %s)"
            " GROUP BY l.holder",
            (APPLICATION_PREFIX, stale_seconds),
        )
        return str(rows[0][0]) if rows and rows[0][1] else None

    def leave(self, member_id: str) -> None:
        """Forget this process (a clean stop)."""
        self._run("DELETE FROM members WHERE id = %s", (member_id,))

    def members(self, fresh_seconds: float = 10.0, timeout: float | None = None) -> list[Member]:
        """Processes heard from within ``fresh_seconds``, oldest first."""
        rows = self._read(
            "SELECT id, host, pid, control_url, role, applied_seq, lag_seconds,"
            " extract(epoch from started_at)::float8,"
            " extract(epoch from now() - seen_at)::float8 FROM members"
            " WHERE seen_at > now() - make_interval(secs => %s) ORDER BY started_at, id",
            (fresh_seconds,),
            timeout,
        )
        return [
            Member(str(i), str(h), int(p), u, str(r), int(a), lag, float(s), float(ago))
            for i, h, p, u, r, a, lag, s, ago in rows
        ]
