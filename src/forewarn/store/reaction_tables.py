"""Reaction tables, shared by both stores: their SQL (per dialect) and row conversions.
Their schema is migration 0003 (``forewarn.store.schema`` gives SQLite its words).

Five tables: ``reaction_events`` (what happened to each event), ``reaction_vms`` (what
each VM did about each event), ``reaction_polls`` (each VM's first and last poll) and
``reaction_operations`` (each operation's VMs, those it hit with no notice included;
migration 0004) and ``reaction_deliveries`` (what Event Grid delivered of each event to
each subscription; migration 0006).
Every write is a merge, so that the front-ends of a scaled-out fleet, each writing what
it saw, never overwrite one another: an event keeps the first value known of each
column, a VM its earliest sighting and approval and its latest poll.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import msgspec

from forewarn.rehearsal.facts import (
    DeliveryFacts,
    EventFacts,
    OperationFacts,
    ReactionData,
    VmPolls,
    VmReaction,
)
from forewarn.store.schema import Dialect, mark

__all__ = [
    "REACTION_TABLES",
    "deliveries_from_rows",
    "delivery_rows",
    "event_rows",
    "events_from_rows",
    "operation_rows",
    "operations_from_rows",
    "poll_rows",
    "polls_from_rows",
    "select_sql",
    "upsert_sql",
    "vm_rows",
    "vms_from_rows",
]

REACTION_TABLES = (
    "reaction_events", "reaction_vms", "reaction_polls", "reaction_operations",
    "reaction_deliveries",
)  # fmt: skip

_EVENT_COLUMNS = (
    "id", "operation_id", "kind", "scope_id", "event_type", "source", "resources",
    "created_at", "not_before", "approved_by", "approved_at", "started_at", "start_reason",
    "ended_at", "ended", "approved_via",
)  # fmt: skip
_VM_COLUMNS = (
    "event_id", "vm", "first_seen", "seen_started", "incarnation", "approved_at",
    "last_poll_before_start",
)  # fmt: skip
_POLL_COLUMNS = ("vm", "first_poll", "last_poll", "api_version")
_OPERATION_COLUMNS = (
    "id", "kind", "target", "rollout_id", "rollout_scope", "batch", "batches", "vms",
    "unnotified", "event_ids", "created_at", "not_before", "started_at", "ended_at", "via",
)  # fmt: skip
_OPERATION_LISTS = ("vms", "unnotified", "event_ids")
_DELIVERY_COLUMNS = (
    "event_id", "subscription", "first_attempt", "scheduled_at", "delivered_at", "attempts",
    "failed_at",
)  # fmt: skip
_DELIVERY_EARLIEST = ("first_attempt", "scheduled_at", "delivered_at", "failed_at")


def _least(dialect: Dialect, old: str, new: str) -> str:
    if dialect == "postgresql":
        return f"LEAST({old}, {new})"  # ignores NULLs
    return f"COALESCE(MIN({old}, {new}), {old}, {new})"  # MIN is NULL if either is


def _greatest(dialect: Dialect, old: str, new: str) -> str:
    if dialect == "postgresql":
        return f"GREATEST({old}, {new})"
    return f"COALESCE(MAX({old}, {new}), {old}, {new})"


def _insert(table: str, columns: Sequence[str], key: str, dialect: Dialect) -> str:
    values = ", ".join(mark(dialect) for _ in columns)
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({values}) ON CONFLICT ({key})"


def upsert_sql(dialect: Dialect) -> dict[str, str]:
    """The merging upsert of each table."""
    t = "reaction_events"
    events = ", ".join(f"{c} = COALESCE({t}.{c}, excluded.{c})" for c in _EVENT_COLUMNS[1:])
    v = "reaction_vms"
    vms = ", ".join([
        f"first_seen = {_least(dialect, f'{v}.first_seen', 'excluded.first_seen')}",
        f"seen_started = {_least(dialect, f'{v}.seen_started', 'excluded.seen_started')}",
        f"incarnation = {_least(dialect, f'{v}.incarnation', 'excluded.incarnation')}",
        f"approved_at = {_least(dialect, f'{v}.approved_at', 'excluded.approved_at')}",
        "last_poll_before_start = "
        + _greatest(dialect, f"{v}.last_poll_before_start", "excluded.last_poll_before_start"),
    ])  # fmt: skip
    p = "reaction_polls"
    polls = ", ".join([
        f"first_poll = {_least(dialect, f'{p}.first_poll', 'excluded.first_poll')}",
        f"last_poll = {_greatest(dialect, f'{p}.last_poll', 'excluded.last_poll')}",
        f"api_version = CASE WHEN {p}.last_poll IS NULL OR excluded.last_poll >= {p}.last_poll"
        f" THEN COALESCE(excluded.api_version, {p}.api_version) ELSE {p}.api_version END",
    ])  # fmt: skip
    o = "reaction_operations"
    ops = ", ".join(f"{c} = COALESCE({o}.{c}, excluded.{c})" for c in _OPERATION_COLUMNS[1:])
    d = "reaction_deliveries"
    deliveries = ", ".join(
        [f"{c} = {_least(dialect, f'{d}.{c}', f'excluded.{c}')}" for c in _DELIVERY_EARLIEST]
        + [f"attempts = {_greatest(dialect, f'{d}.attempts', 'excluded.attempts')}"]
    )
    return {
        "deliveries": _insert(d, _DELIVERY_COLUMNS, "event_id, subscription", dialect)
        + f" DO UPDATE SET {deliveries}",
        "operations": _insert(o, _OPERATION_COLUMNS, "id", dialect) + f" DO UPDATE SET {ops}",
        "events": _insert(t, _EVENT_COLUMNS, "id", dialect) + f" DO UPDATE SET {events}",
        "vms": _insert(v, _VM_COLUMNS, "event_id, vm", dialect) + f" DO UPDATE SET {vms}",
        "polls": _poll_insert(dialect) + f" DO UPDATE SET {polls}",
    }


def _poll_insert(dialect: Dialect) -> str:
    """SQLite takes the polls a row each; PostgreSQL takes them all as one JSON array of
    rows: a statement a row cost its driver some 14 us a row on the writing thread, which
    holds the GIL against the event loop (5,000 rows per front-end every 5 s). Rows of one
    VM are merged first, as one statement may not update a row twice."""
    if dialect != "postgresql":
        return _insert("reaction_polls", _POLL_COLUMNS, "vm", dialect)
    last = "(r->>2)::float8"
    return (
        f"INSERT INTO reaction_polls ({', '.join(_POLL_COLUMNS)})"
        f" SELECT r->>0, MIN((r->>1)::float8), MAX({last}),"
        f" (array_agg(r->>3 ORDER BY {last} DESC NULLS LAST))[1]"
        " FROM json_array_elements(%s::json) AS r GROUP BY r->>0 ON CONFLICT (vm)"
    )


def select_sql(dialect: Dialect) -> dict[str, str]:
    """Reads: events created at or after a time (both parameters: the time, or NULL for
    every event), their VMs' reactions, and every VM's polls."""
    m = mark(dialect)
    cast = "::float8" if dialect == "postgresql" else ""
    since = f"({m}{cast} IS NULL OR created_at >= {m})"
    return {
        "events": f"SELECT {', '.join(_EVENT_COLUMNS)} FROM reaction_events WHERE {since}"
        " ORDER BY created_at, id",
        "vms": f"SELECT {', '.join(_VM_COLUMNS)} FROM reaction_vms WHERE event_id IN"
        f" (SELECT id FROM reaction_events WHERE {since}) ORDER BY event_id, vm",
        "polls": f"SELECT {', '.join(_POLL_COLUMNS)} FROM reaction_polls ORDER BY vm",
        "operations": f"SELECT {', '.join(_OPERATION_COLUMNS)} FROM reaction_operations"
        f" WHERE {since} ORDER BY created_at, id",
        "deliveries": f"SELECT {', '.join(_DELIVERY_COLUMNS)} FROM reaction_deliveries WHERE"
        f" event_id IN (SELECT id FROM reaction_events WHERE {since})"
        " ORDER BY event_id, subscription",
    }


def event_rows(data: ReactionData) -> list[tuple[Any, ...]]:
    """``data``'s events as rows of ``reaction_events`` (resources as JSON text)."""
    rows = []
    for e in data.events:
        resources = None if e.resources is None else msgspec.json.encode(e.resources).decode()
        rows.append((
            e.id, e.operation_id, e.kind, e.scope_id, e.event_type, e.source, resources,
            e.created_at, e.not_before, e.approved_by, e.approved_at, e.started_at,
            e.start_reason, e.ended_at, e.ended, e.approved_via,
        ))  # fmt: skip
    return rows


def vm_rows(data: ReactionData) -> list[tuple[Any, ...]]:
    """``data``'s reactions as rows of ``reaction_vms``."""
    return [
        (r.event_id, r.vm, r.first_seen, r.seen_started, r.incarnation, r.approved_at,
         r.last_poll_before_start)
        for r in data.vms
    ]  # fmt: skip


def poll_rows(data: ReactionData, dialect: Dialect) -> list[tuple[Any, ...]]:
    """``data``'s polls as the parameters of ``reaction_polls``'s upsert: a row each (its
    ``poll_rows`` as they are), or for PostgreSQL one parameter, all of them as JSON."""
    rows = cast(list[tuple[Any, ...]], data.poll_rows)  # no copy of thousands of rows
    if data.polls:
        rows = [(p.vm, p.first_poll, p.last_poll, p.api_version) for p in data.polls] + rows
    if dialect == "postgresql" and rows:
        return [(msgspec.json.encode(rows).decode(),)]
    return rows


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def events_from_rows(rows: Sequence[Sequence[Any]]) -> list[EventFacts]:
    """Rows of ``reaction_events`` back as facts."""
    out = []
    for row in rows:
        values = dict(zip(_EVENT_COLUMNS, row, strict=True))
        raw = values.pop("resources")
        resources = None if raw is None else tuple(msgspec.json.decode(raw, type=list[str]))
        for name in ("created_at", "not_before", "approved_at", "started_at", "ended_at"):
            values[name] = _float(values[name])
        out.append(EventFacts(resources=resources, **values))
    return out


def vms_from_rows(rows: Sequence[Sequence[Any]]) -> list[VmReaction]:
    """Rows of ``reaction_vms`` back as reactions."""
    out = []
    for event_id, vm, seen, seen_started, incarnation, approved, before in rows:
        out.append(
            VmReaction(
                event_id=event_id, vm=vm, first_seen=_float(seen),
                seen_started=_float(seen_started),
                incarnation=None if incarnation is None else int(incarnation),
                approved_at=_float(approved), last_poll_before_start=_float(before),
            )
        )  # fmt: skip
    return out


def polls_from_rows(rows: Sequence[Sequence[Any]]) -> list[VmPolls]:
    """Rows of ``reaction_polls`` back as polls."""
    return [
        VmPolls(vm=vm, first_poll=_float(first), last_poll=_float(last), api_version=version)
        for vm, first, last, version in rows
    ]


def _names(value: tuple[str, ...] | None) -> str | None:
    return None if value is None else msgspec.json.encode(value).decode()


def operation_rows(data: ReactionData) -> list[tuple[Any, ...]]:
    """``data``'s operations as rows of ``reaction_operations`` (name lists as JSON)."""
    return [
        (o.id, o.kind, o.target, o.rollout_id, o.rollout_scope, o.batch, o.batches,
         _names(o.vms), _names(o.unnotified), _names(o.event_ids), o.created_at,
         o.not_before, o.started_at, o.ended_at, o.via)
        for o in data.operations
    ]  # fmt: skip


def operations_from_rows(rows: Sequence[Sequence[Any]]) -> list[OperationFacts]:
    """Rows of ``reaction_operations`` back as facts."""
    out = []
    for row in rows:
        values = dict(zip(_OPERATION_COLUMNS, row, strict=True))
        for name in _OPERATION_LISTS:
            raw = values[name]
            values[name] = None if raw is None else tuple(msgspec.json.decode(raw, type=list[str]))
        for name in ("created_at", "not_before", "started_at", "ended_at"):
            values[name] = _float(values[name])
        for name in ("batch", "batches"):
            values[name] = None if values[name] is None else int(values[name])
        out.append(OperationFacts(**values))
    return out


def delivery_rows(data: ReactionData) -> list[tuple[Any, ...]]:
    """``data``'s Event Grid deliveries as rows of ``reaction_deliveries``."""
    return [
        (d.event_id, d.subscription, d.first_attempt, d.scheduled_at, d.delivered_at,
         d.attempts, d.failed_at)
        for d in data.deliveries
    ]  # fmt: skip


def deliveries_from_rows(rows: Sequence[Sequence[Any]]) -> list[DeliveryFacts]:
    """Rows of ``reaction_deliveries`` back as facts."""
    return [
        DeliveryFacts(
            event_id=event_id, subscription=subscription, first_attempt=_float(first),
            scheduled_at=_float(scheduled), delivered_at=_float(delivered),
            attempts=None if attempts is None else int(attempts), failed_at=_float(failed),
        )
        for event_id, subscription, first, scheduled, delivered, attempts, failed in rows
    ]  # fmt: skip
