"""The platform's tables, shared by both stores: their statements (per dialect) and rows.

Records (operations, events, rollouts, scopes) are msgspec JSON next to their key; a
history entry is its columns plus its detail as JSON. Both stores write a batch of
changes as the same statements in the same order; only the parameter marks differ, and
how the clock position is kept (SQLite has one writer; in PostgreSQL it never moves back,
whoever writes last).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

import msgspec

from forewarn.fabric import (
    Changes,
    EventRecord,
    OperationRecord,
    RolloutRecord,
    ScopeState,
    Snapshot,
)
from forewarn.store.errors import StoreError
from forewarn.store.schema import Dialect, mark

__all__ = [
    "Rows",
    "change_statements",
    "clock_sql",
    "decode_records",
    "load_snapshot",
    "meta_upsert_sql",
]

T = TypeVar("T")

#: Statements with the rows each runs for, in the order they must run.
Rows = list[tuple[str, list[tuple[Any, ...]]]]


def _upsert(table: str, dialect: Dialect) -> str:
    m = mark(dialect)
    return (
        f"INSERT INTO {table} (id, data) VALUES ({m}, {m}) "
        "ON CONFLICT (id) DO UPDATE SET data = excluded.data"
    )


def meta_upsert_sql(dialect: Dialect) -> str:
    """Set one key of the ``meta`` table."""
    m = mark(dialect)
    return (
        f"INSERT INTO meta (key, value) VALUES ({m}, {m}) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
    )


def clock_sql(dialect: Dialect) -> str:
    """Save a virtual clock's position (one parameter: its ``repr``)."""
    if dialect == "postgresql":
        return (
            "INSERT INTO meta (key, value) VALUES ('clock', %s) ON CONFLICT (key) DO UPDATE"
            " SET value = GREATEST(meta.value::float8, excluded.value::float8)::text"
        )
    return (
        "INSERT INTO meta (key, value) VALUES ('clock', ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
    )


#: What ``forewarn fleet reset`` empties.
RESET_TABLES = ("operations", "events", "rollouts", "deleted_vms")


def change_statements(batch: Sequence[Changes], dialect: Dialect) -> Rows:
    """Every row ``batch`` writes, grouped per statement in the order they must run
    (encoded before anything is written: a bad record writes nothing)."""
    enc = msgspec.json.encode
    m = mark(dialect)
    out: Rows = []
    for changes in batch:
        clock = changes.clock_position
        if changes.reset:  # forewarn fleet reset: history and scope counters stay
            out += [(f"DELETE FROM {table}", [()]) for table in RESET_TABLES]
        out += [
            (_upsert("operations", dialect), [(r.id, enc(r)) for r in changes.operations]),
            (_upsert("events", dialect), [(r.id, enc(r)) for r in changes.events]),
            (f"DELETE FROM events WHERE id = {m}", [(i,) for i in changes.removed_events]),
            (_upsert("rollouts", dialect), [(r.id, enc(r)) for r in changes.rollouts]),
            (_upsert("scopes", dialect), [(s.scope_id, enc(s)) for s in changes.scopes]),
            (
                f"INSERT INTO deleted_vms (name) VALUES ({m}) ON CONFLICT DO NOTHING",
                [(n,) for n in changes.deleted_vms],
            ),
            (
                "INSERT INTO history (at, kind, scope_id, operation_id, event_id, detail)"
                f" VALUES ({m}, {m}, {m}, {m}, {m}, {m})",
                [
                    (h.at, h.kind, h.scope_id, h.operation_id, h.event_id, enc(h.detail))
                    for h in changes.history
                ],
            ),
            (clock_sql(dialect), [] if clock is None else [(repr(clock),)]),
            (  # what the change owes, kept with it (its reader deletes it)
                f"INSERT INTO outbox (id, channel, body) VALUES ({m}, {m}, {m})"
                " ON CONFLICT (id) DO NOTHING",
                [(o.id, o.channel, o.body) for o in changes.outbox],
            ),
        ]
    return out


def decode_records(
    rows: Sequence[tuple[Any, Any]], kind: type[T], table: str, where: str
) -> list[T]:
    """(key, data) rows of a record table back as records; a row that cannot be read is
    a ``StoreError`` naming it."""
    out = []
    for key, data in rows:
        try:
            out.append(msgspec.json.decode(data, type=kind))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise StoreError(
                f"database {where} is damaged: row {key!r} of table {table} cannot be read ({exc})"
            ) from None
    return out


class _Fetched(Protocol):
    def fetchall(self) -> list[Any]: ...


def load_snapshot(
    execute: Callable[[str], _Fetched], *, key: str, order: str, where: str
) -> Snapshot:
    """The whole state, read with ``execute`` (a connection's or a cursor's); ``order`` is
    the column that keeps the records' insertion order, ``key`` the one a damaged row is
    named by."""

    def records(table: str, kind: type[T]) -> list[T]:
        rows = execute(f"SELECT {key}, data FROM {table} ORDER BY {order}").fetchall()
        return decode_records(rows, kind, table, where)

    return Snapshot(
        operations=records("operations", OperationRecord),
        events=records("events", EventRecord),
        rollouts=records("rollouts", RolloutRecord),
        scopes=records("scopes", ScopeState),
        deleted_vms=[str(r[0]) for r in execute("SELECT name FROM deleted_vms").fetchall()],
    )
