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
import threading
from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec
import psycopg
import psycopg_pool

from forewarn.fabric import (
    Changes,
    EventRecord,
    HistoryEntry,
    OperationRecord,
    RolloutRecord,
    ScopeState,
    Snapshot,
    StoreUnavailable,
)
from forewarn.rehearsal.facts import ReactionData, VmPolls
from forewarn.store import reaction_tables as rx
from forewarn.store.postgres_schema import connect, display_url, migrate
from forewarn.store.sqlite import StoreError

__all__ = ["CHANGES_CHANNEL", "Deposed", "PostgresStore"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: NOTIFY channel of the change log (payload: the new head).
CHANGES_CHANNEL = "forewarn_changes"

#: How long a write waits for a pooled connection before it fails (off the event loop).
WRITE_TIMEOUT = 5.0

_ENCODE_LOG = msgspec.msgpack.Encoder()

_HISTORY_COLUMNS = "seq, at, kind, scope_id, operation_id, event_id, detail"

_REACTION_UPSERTS = rx.upsert_sql("postgresql")
_REACTION_SELECTS = rx.select_sql("postgresql")


class Deposed(StoreUnavailable):
    """This process no longer leads the fleet: another one took over (a newer epoch)."""

    def __init__(self, epoch: int) -> None:
        super().__init__(
            f"this process no longer leads the fleet (its epoch {epoch} was taken over); "
            "it writes nothing more",
            permanent=True,
        )
        self.epoch = epoch


def _upsert(table: str) -> str:
    return (
        f"INSERT INTO {table} (id, data) VALUES (%s, %s) "
        "ON CONFLICT (id) DO UPDATE SET data = excluded.data"
    )


class PostgresStore:
    """A ``forewarn.fabric.Store`` on a PostgreSQL database (shared by every process)."""

    def __init__(self, url: str, *, pool_size: int = 4) -> None:
        self.url = url
        self.where = display_url(url)
        with connect(url) as conn:
            self.schema_version = migrate(conn, self.where)
        self._pool = psycopg_pool.ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True},
            open=False,
            name="forewarn-store",
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

    def _rows(self, cur: psycopg.Cursor[Any], table: str, kind: type[T]) -> list[T]:
        out = []
        for key, data in cur.execute(f"SELECT id, data FROM {table} ORDER BY pos").fetchall():
            try:
                out.append(msgspec.json.decode(data, type=kind))
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                raise StoreError(
                    f"database {self.where} is damaged: row {key!r} of table {table} "
                    f"cannot be read ({exc})"
                ) from None
        return out

    def load(self) -> Snapshot:
        """Everything the engine needs to resume, as of one instant (``loaded_head``)."""
        try:
            with self._pool.connection(timeout=WRITE_TIMEOUT) as conn:
                conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
                try:
                    with conn.transaction(), conn.cursor() as cur:
                        row = cur.execute("SELECT head FROM leader WHERE id = 1").fetchone()
                        snapshot = Snapshot(
                            operations=self._rows(cur, "operations", OperationRecord),
                            events=self._rows(cur, "events", EventRecord),
                            rollouts=self._rows(cur, "rollouts", RolloutRecord),
                            scopes=self._rows(cur, "scopes", ScopeState),
                            deleted_vms=[
                                str(r[0]) for r in cur.execute("SELECT name FROM deleted_vms")
                            ],
                        )
                finally:
                    conn.isolation_level = None
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise StoreError(f"cannot read database {self.where}: {_reason(exc)}") from None
        self.loaded_head = int(row[0]) if row is not None else 0
        self.head = max(self.head, self.loaded_head)
        return snapshot

    # ----------------------------------------------------------------- writing

    def apply(self, changes: Changes) -> None:
        """Write ``changes`` in one transaction (an empty one is a probe)."""
        self.apply_all([changes])

    def apply_all(self, batch: Sequence[Changes]) -> None:
        """Write several changes, in order, in one transaction (group commit), each
        appended to the change log; raises ``StoreUnavailable`` (nothing written)."""
        if self._closed:
            raise StoreUnavailable(f"the store {self.where} is closed")
        logged = [c for c in batch if not c.empty()]
        statements = _statements(batch)  # encoded first: a bad record writes nothing
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
            raise StoreUnavailable(f"cannot write database {self.where}: {_reason(exc)}") from None

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

    # --------------------------------------------------------------- reactions

    def save_reactions(self, data: ReactionData) -> None:
        """Merge reaction facts into the reaction tables, in one transaction (any process
        may write them: they are not part of the leader's change log)."""
        if self._closed:
            raise StoreUnavailable(f"the store {self.where} is closed")
        sql = _REACTION_UPSERTS
        batches = [
            (sql["events"], rx.event_rows(data)),
            (sql["vms"], rx.vm_rows(data)),
            (sql["polls"], rx.poll_rows(data)),
        ]
        try:
            with (
                self._pool.connection(timeout=WRITE_TIMEOUT) as conn,
                conn.transaction(),
                conn.cursor() as cur,
            ):
                for statement, rows in batches:
                    if rows:
                        cur.executemany(statement, rows)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise StoreUnavailable(f"cannot write database {self.where}: {_reason(exc)}") from None

    def reactions(self, since: float | None = None) -> ReactionData:
        """Events created at or after ``since``, the reactions to them, every VM's polls."""
        sql = _REACTION_SELECTS
        try:
            with self._pool.connection(timeout=WRITE_TIMEOUT) as conn:
                conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
                try:
                    with conn.transaction(), conn.cursor() as cur:
                        events = cur.execute(sql["events"], (since, since)).fetchall()
                        vms = cur.execute(sql["vms"], (since, since)).fetchall()
                        polls = cur.execute(sql["polls"]).fetchall()
                finally:
                    conn.isolation_level = None
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise StoreUnavailable(f"cannot read database {self.where}: {_reason(exc)}") from None
        return ReactionData(
            events=rx.events_from_rows(events),
            vms=rx.vms_from_rows(vms),
            polls=rx.polls_from_rows(polls),
        )

    def polls(self) -> list[VmPolls]:
        """Every VM's first and last poll, as merged from every front-end."""
        return rx.polls_from_rows(self._read(_REACTION_SELECTS["polls"]))

    # ------------------------------------------------------------------- reads

    def history(
        self,
        *,
        after: int = 0,
        limit: int = 1000,
        event_id: str | None = None,
        operation_id: str | None = None,
        newest: bool = False,
    ) -> list[HistoryEntry]:
        """History entries after ``seq``, oldest first, optionally for one event/operation;
        with ``newest``, the last ``limit`` such entries."""
        sql = f"SELECT {_HISTORY_COLUMNS} FROM history WHERE seq > %s"
        args: list[Any] = [after]
        if event_id is not None:
            sql += " AND event_id = %s"
            args.append(event_id)
        if operation_id is not None:
            sql += " AND operation_id = %s"
            args.append(operation_id)
        sql += " ORDER BY seq DESC LIMIT %s" if newest else " ORDER BY seq LIMIT %s"
        args.append(limit)
        rows = self._read(sql, args)
        entries = [
            HistoryEntry(
                seq=int(seq), at=float(at), kind=kind, scope_id=scope, operation_id=op,
                event_id=ev, detail=msgspec.json.decode(detail),
            )
            for seq, at, kind, scope, op, ev, detail in rows
        ]  # fmt: skip
        return entries[::-1] if newest else entries

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            with self._pool.connection(timeout=WRITE_TIMEOUT) as conn:
                return conn.execute(sql, args).fetchall()
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise StoreUnavailable(f"cannot read database {self.where}: {_reason(exc)}") from None

    def _write_meta(self, sql: str, args: Sequence[Any]) -> None:
        try:
            with self._pool.connection(timeout=WRITE_TIMEOUT) as conn:
                conn.execute(sql, args)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise StoreUnavailable(f"cannot write database {self.where}: {_reason(exc)}") from None

    def _meta(self, key: str) -> str | None:
        rows = self._read("SELECT value FROM meta WHERE key = %s", (key,))
        return None if not rows else str(rows[0][0])

    def _decoded_meta(self, key: str, what: str) -> Any:
        raw = self._meta(key)
        if raw is None:
            return None
        try:
            return msgspec.json.decode(raw)
        except msgspec.DecodeError as exc:
            raise StoreError(
                f"database {self.where} is damaged: {what} cannot be read ({exc})"
            ) from None

    def _save_meta(self, key: str, value: str) -> None:
        self._write_meta(
            "INSERT INTO meta (key, value) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def stored_fleet(self) -> dict[str, Any] | None:
        """The fleet this database was created with."""
        fleet = self._decoded_meta("fleet", "the stored fleet")
        if fleet is not None and not isinstance(fleet, dict):
            raise StoreError(f"database {self.where} is damaged: the stored fleet is not a mapping")
        return fleet

    def save_fleet(self, fleet: dict[str, Any]) -> None:
        """Remember the fleet (every process of a scaled-out fleet serves this one)."""
        self._save_meta("fleet", msgspec.json.encode(fleet).decode())

    def stored_settings(self) -> dict[str, Any]:
        """Server settings remembered with the fleet (clock kind, time scale)."""
        settings = self._decoded_meta("settings", "the stored settings")
        return settings if isinstance(settings, dict) else {}

    def save_settings(self, settings: dict[str, Any]) -> None:
        """Remember server settings that every process and restart must share."""
        self._save_meta("settings", msgspec.json.encode(settings).decode())

    def clock_position(self) -> float | None:
        """The last saved position of a virtual clock."""
        raw = self._meta("clock")
        if raw is None:
            return None
        try:
            return float(raw)
        except ValueError:
            raise StoreError(f"database {self.where} is damaged: clock position {raw!r}") from None

    def save_clock_position(self, position: float) -> None:
        """Save a virtual clock's position; it never moves back, whoever writes last."""
        self._write_meta(
            "INSERT INTO meta (key, value) VALUES ('clock', %s) ON CONFLICT (key) DO UPDATE"
            " SET value = GREATEST(meta.value::float8, excluded.value::float8)::text",
            (repr(position),),
        )

    def close(self) -> None:
        """Close every pooled connection."""
        self._closed = True
        self._pool.close()


#: What ``forewarn fleet reset`` empties.
_RESET_TABLES = ("operations", "events", "rollouts", "deleted_vms")


def _statements(batch: Sequence[Changes]) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """Every row ``batch`` writes, grouped per statement in the order they must run."""
    enc = msgspec.json.encode
    out: list[tuple[str, list[tuple[Any, ...]]]] = []
    for changes in batch:
        clock = changes.clock_position
        if changes.reset:  # forewarn fleet reset: history and scope counters stay
            out += [(f"DELETE FROM {table}", [()]) for table in _RESET_TABLES]
        out += [
            (_upsert("operations"), [(r.id, enc(r)) for r in changes.operations]),
            (_upsert("events"), [(r.id, enc(r)) for r in changes.events]),
            ("DELETE FROM events WHERE id = %s", [(i,) for i in changes.removed_events]),
            (_upsert("rollouts"), [(r.id, enc(r)) for r in changes.rollouts]),
            (_upsert("scopes"), [(s.scope_id, enc(s)) for s in changes.scopes]),
            (
                "INSERT INTO deleted_vms (name) VALUES (%s) ON CONFLICT DO NOTHING",
                [(n,) for n in changes.deleted_vms],
            ),
            (
                "INSERT INTO history (at, kind, scope_id, operation_id, event_id, detail)"
                " VALUES (%s, %s, %s, %s, %s, %s)",
                [
                    (h.at, h.kind, h.scope_id, h.operation_id, h.event_id, enc(h.detail))
                    for h in changes.history
                ],
            ),
            (
                "INSERT INTO meta (key, value) VALUES ('clock', %s) ON CONFLICT (key) DO UPDATE"
                " SET value = GREATEST(meta.value::float8, excluded.value::float8)::text",
                [] if clock is None else [(repr(clock),)],
            ),
        ]
    return out


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
