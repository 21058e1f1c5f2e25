"""The shared store: the fleet's state in PostgreSQL, written by one leader, read by all.

Same tables as the SQLite store (msgspec JSON records next to their key). Every write is
one transaction that also appends each change to the ``changes`` log and NOTIFYs its new
sequence number, which is how every other process keeps its views current
(``forewarn.server.cluster.replication``). The transaction starts by moving the log head on in
the single ``leader`` row: that serialises writers, numbers the log without gaps, and,
once the store is ``fence``d, checks the leader's epoch, so a process that lost the
leadership can never write again (its writes fail with ``Deposed``).

A write that fails raises ``StoreUnavailable`` and changes nothing; the pool reconnects
by itself, so the server recovers when the database does. Problems when opening (no
server, wrong password, a schema from a newer forewarn, a missing table) are a
``StoreError`` naming the database.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec
import psycopg
import psycopg_pool

from forewarn.fabric import (
    Changes,
    Snapshot,
    StoreUnavailable,
)
from forewarn.store.errors import StoreError, first_line
from forewarn.store.platform_tables import Rows, change_statements, load_snapshot
from forewarn.store.postgres_schema import connect, display_url, migrate
from forewarn.store.sql_store import Query, SqlStore

__all__ = ["APPLICATION_PREFIX", "CHANGES_CHANNEL", "Deposed", "PostgresStore", "session_name"]

log = logging.getLogger(__name__)


#: NOTIFY channel of the change log (payload: the new head).
CHANGES_CHANNEL = "forewarn_changes"

#: Every session of a process is named this followed by its member id (cut, as
#: PostgreSQL does, to 63 bytes), so that the sessions of a frozen leader can be found.
APPLICATION_PREFIX = "forewarn "

#: How long a write waits for a pooled connection before it fails (off the event loop).
WRITE_TIMEOUT = 5.0

_ENCODE_LOG = msgspec.msgpack.Encoder()


def session_name(member: str) -> str:
    """The ``application_name`` of every session of the process ``member``."""
    return (APPLICATION_PREFIX + member).encode()[:63].decode(errors="ignore")


class Deposed(StoreUnavailable):
    """This process no longer leads the fleet: another one took over (a newer epoch)."""

    def __init__(self, epoch: int) -> None:
        super().__init__(
            f"this process no longer leads the fleet (its epoch {epoch} was taken over); "
            "it writes nothing more",
            permanent=True,
        )
        self.epoch = epoch


class PostgresStore(SqlStore):
    """A ``forewarn.fabric.Store`` on a PostgreSQL database (shared by every process)."""

    dialect = "postgresql"

    def __init__(self, url: str, *, pool_size: int = 4) -> None:
        self.url = url
        self.where = display_url(url)
        #: This process among those sharing the database (its sessions carry it).
        self.member = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
        self.session_name = session_name(self.member)
        with connect(url) as conn:
            self.schema_version = migrate(conn, self.where)
        self._pool = psycopg_pool.ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True, "application_name": self.session_name},
            open=False,
            name="forewarn-store",
            # A connection the server dropped while it sat idle (a restart, an outage,
            # pg_terminate_backend) is replaced at checkout instead of failing the first
            # write after the database is back: one empty query per checkout.
            check=psycopg_pool.ConnectionPool.check_connection,
        )
        try:
            self._pool.open(wait=True, timeout=10)
        except psycopg_pool.PoolTimeout:
            self._pool.close()
            raise StoreError(f"cannot connect to {self.where}: no connection in 10 s") from None
        #: The epoch this process writes under (None: not fenced, any writer may write).
        self.epoch: int | None = None
        #: The log head after this store's last write (or load).
        self.head = 0
        #: The log head at the last ``load`` (the snapshot holds every change up to it).
        self.loaded_head = 0
        self._lock = threading.Lock()
        self._closed = False

    # ------------------------------------------------------------------ opening

    def connection(
        self, timeout: float = WRITE_TIMEOUT
    ) -> contextlib.AbstractContextManager[psycopg.Connection[Any]]:
        """A pooled autocommit connection (``forewarn.store.postgres_cluster`` uses it)."""
        return self._pool.connection(timeout=timeout)

    def fence(self, epoch: int | None) -> None:
        """Write only under ``epoch`` from now on (a takeover fails every older writer)."""
        self.epoch = epoch

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[psycopg.Cursor[Any]]:
        """A cursor in a REPEATABLE READ transaction: every query sees the same instant."""
        with self._pool.connection(timeout=WRITE_TIMEOUT) as conn:
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            try:
                with conn.transaction(), conn.cursor() as cur:
                    yield cur
            finally:
                conn.isolation_level = None

    def load(self) -> Snapshot:
        """Everything the engine needs to resume, as of one instant (``loaded_head``)."""
        try:
            with self._snapshot() as cur:
                row = cur.execute("SELECT head FROM leader WHERE id = 1").fetchone()
                snapshot = load_snapshot(cur.execute, key="id", order="pos", where=self.where)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise StoreError(f"cannot read database {self.where}: {first_line(exc)}") from None
        self.loaded_head = int(row[0]) if row is not None else 0
        self.head = max(self.head, self.loaded_head)
        return snapshot

    # ----------------------------------------------------------------- writing

    def apply_all(self, batch: Sequence[Changes]) -> None:
        """Write several changes, in order, in one transaction (group commit), each
        appended to the change log; raises ``StoreUnavailable`` (nothing written)."""
        if self._closed:
            raise StoreUnavailable(f"the store {self.where} is closed")
        logged = [c for c in batch if not c.empty()]
        statements = change_statements(batch, "postgresql")
        log_rows = [_ENCODE_LOG.encode(c) for c in logged]
        epoch = self.epoch
        try:
            with self._lock, self._pool.connection(timeout=WRITE_TIMEOUT) as conn:
                with conn.transaction(), conn.cursor() as cur:
                    head = self._move_head(cur, len(logged), epoch)
                    first = head - len(logged) + 1
                    with conn.pipeline():  # one round trip for every statement below
                        for sql, rows in statements:
                            if rows:
                                cur.executemany(sql, rows)
                        if log_rows:
                            cur.executemany(
                                "INSERT INTO changes (seq, epoch, committed_at, data) VALUES"
                                " (%s, %s, extract(epoch from clock_timestamp()), %s)",
                                [(first + i, epoch or 0, d) for i, d in enumerate(log_rows)],
                            )
                            cur.execute("SELECT pg_notify(%s, %s)", (CHANGES_CHANNEL, str(head)))
                self.head = head
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise self._failed("write", exc) from None

    @staticmethod
    def _move_head(cur: psycopg.Cursor[Any], count: int, epoch: int | None) -> int:
        """Lock the leader row (serialising writers), check the epoch, move the head."""
        if epoch is None:
            row = cur.execute(
                "UPDATE leader SET head = head + %s WHERE id = 1 RETURNING head", (count,)
            ).fetchone()
        else:
            row = cur.execute(
                "UPDATE leader SET head = head + %s WHERE id = 1 AND epoch = %s RETURNING head",
                (count, epoch),
            ).fetchone()
            if row is None:
                raise Deposed(epoch)
        if row is None:  # pragma: no cover - the migration inserts the row
            raise StoreUnavailable("the leader row is missing")
        return int(row[0])

    # ------------------------------------------------------------------- reads

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            with self._pool.connection(timeout=WRITE_TIMEOUT) as conn:
                return conn.execute(sql, args).fetchall()
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise self._failed("read", exc) from None

    def _read_together(self, queries: Sequence[Query]) -> list[list[tuple[Any, ...]]]:
        try:
            with self._snapshot() as cur:
                return [cur.execute(sql, args).fetchall() for sql, args in queries]
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise self._failed("read", exc) from None

    def _write_together(self, statements: Rows) -> None:
        if self._closed:
            raise StoreUnavailable(f"the store {self.where} is closed")
        try:
            with (
                self._pool.connection(timeout=WRITE_TIMEOUT) as conn,
                conn.transaction(),
                conn.cursor() as cur,
            ):
                for sql, rows in statements:
                    if rows:
                        cur.executemany(sql, rows)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise self._failed("write", exc) from None

    def _write(self, sql: str, args: Sequence[Any]) -> None:
        try:
            with self._pool.connection(timeout=WRITE_TIMEOUT) as conn:
                conn.execute(sql, args)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise self._failed("write", exc) from None

    def _failed(self, doing: str, exc: BaseException) -> StoreUnavailable:
        return StoreUnavailable(f"cannot {doing} database {self.where}: {first_line(exc)}")

    def close(self) -> None:
        """Close every pooled connection."""
        self._closed = True
        self._pool.close()
