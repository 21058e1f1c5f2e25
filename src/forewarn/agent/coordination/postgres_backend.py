"""Votes in PostgreSQL: one row per (namespace, event, VM) with an expiry time.

A vote is written and the event's votes read back in one transaction that first takes a
transaction-scoped advisory lock on the event, so concurrent voters are serialised and
the last one always reads the complete group. Expired rows are deleted as votes arrive.

The approval is claimed in a second table (``<table>_claims``, one row per event): an
``INSERT ... ON CONFLICT DO UPDATE ... WHERE`` that only a missing, expired, or already
our own row lets through, so PostgreSQL's row lock decides who approves. ``forget`` deletes
the event's votes and leaves its claim to expire (expired claims are deleted then).
"""

from __future__ import annotations

import asyncio
from typing import Any

from forewarn.agent.coordination.base import Claim, CoordinationError, Vote

__all__ = ["PostgresCoordinator"]


class PostgresCoordinator:
    """A ``Coordinator`` over one connection, reopened after a failure."""

    def __init__(self, url: str, namespace: str, ttl: float, table: str) -> None:
        import psycopg  # imported only by agents that coordinate over PostgreSQL
        from psycopg import sql

        self._psycopg: Any = psycopg
        self._url = url
        self._namespace = namespace
        self._ttl = ttl
        self._table = sql.Identifier(table)
        self._claims = sql.Identifier(f"{table}_claims")
        self._sql = sql
        self._conn: Any = None
        #: One connection, one transaction at a time (psycopg would nest them as savepoints).
        self._lock = asyncio.Lock()

    async def _connection(self) -> Any:
        if self._conn is None or self._conn.closed:
            self._conn = await self._psycopg.AsyncConnection.connect(
                self._url, autocommit=True, connect_timeout=10
            )
            await self._create()
        return self._conn

    async def _create(self) -> None:
        sql = self._sql
        async with self._conn.transaction():
            # Serialise CREATE TABLE IF NOT EXISTS: concurrent ones can clash in pg_type.
            await self._conn.execute("SELECT pg_advisory_xact_lock(7193513, 1)")
            await self._conn.execute(
                sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {} ("
                    " namespace TEXT NOT NULL, event_id TEXT NOT NULL, vm TEXT NOT NULL,"
                    " ready BOOLEAN NOT NULL, reason TEXT NOT NULL, at DOUBLE PRECISION NOT NULL,"
                    " expires_at TIMESTAMPTZ NOT NULL,"
                    " PRIMARY KEY (namespace, event_id, vm))"
                ).format(self._table)
            )
            await self._conn.execute(
                sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {} ("
                    " namespace TEXT NOT NULL, event_id TEXT NOT NULL, vm TEXT NOT NULL,"
                    " done BOOLEAN NOT NULL, expires_at TIMESTAMPTZ NOT NULL,"
                    " PRIMARY KEY (namespace, event_id))"
                ).format(self._claims)
            )

    async def _run(self, work: Any) -> Any:
        async with self._lock:
            return await self._run_locked(work)

    async def _run_locked(self, work: Any) -> Any:
        try:
            conn = await self._connection()
            return await work(conn)
        except self._psycopg.Error as exc:
            if self._conn is not None and not self._conn.closed:
                await self._conn.close()
            self._conn = None
            raise CoordinationError(f"postgres: {str(exc).strip()}") from None
        except OSError as exc:
            self._conn = None
            raise CoordinationError(f"postgres: {exc}") from None

    async def _select(self, conn: Any, event_id: str) -> dict[str, Vote]:
        cursor = await conn.execute(
            self._sql.SQL(
                "SELECT vm, ready, reason, at FROM {} WHERE namespace = %s AND event_id = %s"
                " AND expires_at > now()"
            ).format(self._table),
            (self._namespace, event_id),
        )
        return {row[0]: Vote(*row) for row in await cursor.fetchall()}

    async def record(
        self, event_id: str, vm: str, ready: bool, reason: str, at: float
    ) -> dict[str, Vote]:
        sql = self._sql

        async def work(conn: Any) -> dict[str, Vote]:
            async with conn.transaction():
                await conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                    (f"{self._namespace}:{event_id}",),
                )
                await conn.execute(
                    sql.SQL(
                        "INSERT INTO {} (namespace, event_id, vm, ready, reason, at, expires_at)"
                        " VALUES (%s, %s, %s, %s, %s, %s, now() + make_interval(secs => %s))"
                        " ON CONFLICT (namespace, event_id, vm) DO UPDATE SET"
                        " ready = excluded.ready, reason = excluded.reason, at = excluded.at,"
                        " expires_at = excluded.expires_at"
                    ).format(self._table),
                    (self._namespace, event_id, vm, ready, reason, at, self._ttl),
                )
                await conn.execute(
                    sql.SQL("DELETE FROM {} WHERE expires_at <= now()").format(self._table)
                )
                return await self._select(conn, event_id)

        result: dict[str, Vote] = await self._run(work)
        return result

    async def votes(self, event_id: str) -> dict[str, Vote]:
        async def work(conn: Any) -> dict[str, Vote]:
            return await self._select(conn, event_id)

        result: dict[str, Vote] = await self._run(work)
        return result

    async def claim(self, event_id: str, vm: str, lease: float) -> Claim:
        sql = self._sql

        async def work(conn: Any) -> Claim:
            cursor = await conn.execute(
                sql.SQL(
                    "INSERT INTO {0} AS c (namespace, event_id, vm, done, expires_at)"
                    " VALUES (%s, %s, %s, false, now() + make_interval(secs => %s))"
                    " ON CONFLICT (namespace, event_id) DO UPDATE SET"
                    " vm = excluded.vm, done = false, expires_at = excluded.expires_at"
                    " WHERE c.expires_at <= now() OR (NOT c.done AND c.vm = excluded.vm)"
                    " RETURNING vm"
                ).format(self._claims),
                (self._namespace, event_id, vm, lease),
            )
            if await cursor.fetchone() is not None:
                return Claim(holder=vm, done=False, ours=True)
            cursor = await conn.execute(
                sql.SQL("SELECT vm, done FROM {} WHERE namespace = %s AND event_id = %s").format(
                    self._claims
                ),
                (self._namespace, event_id),
            )
            row = await cursor.fetchone()
            if row is None:  # forgotten in between: the event left
                return Claim(holder="", done=True, ours=False)
            return Claim(holder=row[0], done=bool(row[1]), ours=False)

        result: Claim = await self._run(work)
        return result

    async def settle(self, event_id: str, vm: str) -> bool:
        async def work(conn: Any) -> bool:
            cursor = await conn.execute(
                self._sql.SQL(
                    "UPDATE {} SET done = true, expires_at = now() + make_interval(secs => %s)"
                    " WHERE namespace = %s AND event_id = %s AND vm = %s"
                    " AND (done OR expires_at > now()) RETURNING vm"
                ).format(self._claims),
                (self._ttl, self._namespace, event_id, vm),
            )
            return await cursor.fetchone() is not None

        result: bool = await self._run(work)
        return result

    async def forget(self, event_id: str) -> None:
        sql = self._sql

        async def work(conn: Any) -> None:
            await conn.execute(
                sql.SQL("DELETE FROM {} WHERE namespace = %s AND event_id = %s").format(
                    self._table
                ),
                (self._namespace, event_id),
            )
            # An expired claim is as good as none (``claim`` takes it over): drop them here.
            await conn.execute(
                sql.SQL("DELETE FROM {} WHERE namespace = %s AND expires_at <= now()").format(
                    self._claims
                ),
                (self._namespace,),
            )

        await self._run(work)

    async def close(self) -> None:
        if self._conn is not None and not self._conn.closed:
            await self._conn.close()
        self._conn = None
