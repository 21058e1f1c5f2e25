"""What the SQLite and the PostgreSQL store do alike: history queries, the reaction
tables, the Event Grid subscriptions and their pending notices, the outbox of what
changes owe (written with them, ``platform_tables``), and the values kept in
the ``meta`` table (the fleet, the server's settings, a virtual clock's position).

Each store says how it writes a batch of changes (``apply_all``) and runs statements
(``_read``, ``_write`` and their ``_together`` forms): on its own connections and locks
for SQLite, on pooled connections for PostgreSQL.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import msgspec

from forewarn.fabric import Changes, HistoryEntry
from forewarn.rehearsal.facts import ReactionData, VmPolls
from forewarn.rehearsal.sliced_drop import drop_sliced
from forewarn.store import reaction_tables as rx
from forewarn.store.errors import StoreError
from forewarn.store.platform_tables import Rows, clock_sql, meta_upsert_sql
from forewarn.store.schema import Dialect, mark

__all__ = ["PendingRow", "Query", "SqlStore"]

#: One query and its parameters.
Query = tuple[str, Sequence[Any]]

_DIALECTS: tuple[Dialect, ...] = ("sqlite", "postgresql")
_REACTION_UPSERTS = {dialect: rx.upsert_sql(dialect) for dialect in _DIALECTS}
_REACTION_SELECTS = {dialect: rx.select_sql(dialect) for dialect in _DIALECTS}

#: Counts a write of reaction facts, in the write's transaction (``reactions_written``).
_COUNT_WRITE = (
    "INSERT INTO reaction_writes (id, writes) VALUES (1, 1)"
    " ON CONFLICT (id) DO UPDATE SET writes = reaction_writes.writes + 1"
)

_HISTORY_COLUMNS = "seq, at, kind, scope_id, operation_id, event_id, detail"
_PENDING_COLUMNS = "subscription, id, body, attempts, first_at, due_at"

#: An Event Grid notice not yet delivered: subscription, notice id, the notice as JSON,
#: attempts so far, first offered and next attempt due (epoch seconds).
PendingRow = tuple[str, str, str, int, float, float]


class SqlStore(ABC):
    """The reads and small writes both stores share, over the two primitives below."""

    dialect: ClassVar[Dialect]
    #: Where the database is, for messages (a path, or a URL without its password).
    where: str

    @abstractmethod
    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one query; ``StoreUnavailable`` when it cannot be run."""

    @abstractmethod
    def _write(self, sql: str, args: Sequence[Any]) -> None:
        """Run one statement on its own; ``StoreUnavailable`` when it cannot be run."""

    @abstractmethod
    def _read_together(self, queries: Sequence[Query]) -> list[list[tuple[Any, ...]]]:
        """The rows of several queries, read as of one instant where the store can."""

    @abstractmethod
    def _write_together(self, statements: Rows) -> None:
        """Run each statement for its rows, in one transaction: all or nothing."""

    @abstractmethod
    def apply_all(self, batch: Sequence[Changes]) -> None:
        """Write several changes, in order, in one transaction (group commit)."""

    def apply(self, changes: Changes) -> None:
        """Write ``changes`` in one transaction (an empty one is a probe)."""
        self.apply_all([changes])

    # ----------------------------------------------------------------- history

    def history(
        self,
        *,
        after: int = 0,
        limit: int = 1000,
        event_id: str | None = None,
        operation_id: str | None = None,
        kind: str | None = None,
        newest: bool = False,
    ) -> list[HistoryEntry]:
        """History entries after ``seq``, oldest first, optionally for one event, operation
        or ``kind`` (filtered here, not by the caller); with ``newest``, the last ``limit``
        such entries."""
        m = mark(self.dialect)
        sql = f"SELECT {_HISTORY_COLUMNS} FROM history WHERE seq > {m}"
        args: list[Any] = [after]
        if event_id is not None:
            sql += f" AND event_id = {m}"
            args.append(event_id)
        if operation_id is not None:
            sql += f" AND operation_id = {m}"
            args.append(operation_id)
        if kind is not None:
            sql += f" AND kind = {m}"
            args.append(kind)
        sql += f" ORDER BY seq DESC LIMIT {m}" if newest else f" ORDER BY seq LIMIT {m}"
        args.append(limit)
        entries = [
            HistoryEntry(
                seq=int(seq), at=float(at), kind=kind, scope_id=scope, operation_id=op,
                event_id=ev, detail=msgspec.json.decode(detail),
            )
            for seq, at, kind, scope, op, ev, detail in self._read(sql, args)
        ]  # fmt: skip
        return entries[::-1] if newest else entries

    # --------------------------------------------------------------- reactions

    def save_reactions(self, data: ReactionData) -> None:
        """Merge reaction facts into the reaction tables, in one transaction (in a shared
        store any process may write them: they are not part of the leader's change log)."""
        sql = _REACTION_UPSERTS[self.dialect]
        statements = [
            (sql["events"], rx.event_rows(data)),
            (sql["vms"], rx.vm_rows(data)),
            (sql["polls"], rx.poll_rows(data, self.dialect)),
            (sql["operations"], rx.operation_rows(data)),
            (sql["deliveries"], rx.delivery_rows(data)),
            (_COUNT_WRITE, [()]),
        ]  # fmt: skip
        try:
            self._write_together(statements)
        finally:  # the rows made here, a tuple a fact (a wave's thousands): in pieces
            drop_sliced(*(rows for _, rows in statements if rows is not data.poll_rows))

    def reactions_written(self) -> int:
        """How many times reaction facts were written, by every process (0: never): the
        same count means the same facts."""
        rows = self._read("SELECT writes FROM reaction_writes WHERE id = 1")
        return int(rows[0][0]) if rows else 0

    def reactions(self, since: float | None = None) -> ReactionData:
        """Events created at or after ``since``, the reactions to them, every VM's polls."""
        sql = _REACTION_SELECTS[self.dialect]
        events, vms, polls, operations, deliveries = self._read_together([
            (sql["events"], (since, since)),
            (sql["vms"], (since, since)),
            (sql["polls"], ()),
            (sql["operations"], (since, since)),
            (sql["deliveries"], (since, since)),
        ])  # fmt: skip
        data = ReactionData(
            events=rx.events_from_rows(events),
            vms=rx.vms_from_rows(vms),
            polls=rx.polls_from_rows(polls),
            operations=rx.operations_from_rows(operations),
            deliveries=rx.deliveries_from_rows(deliveries),
        )
        # a tuple a row, a million after a region rollout: let go in pieces, not all at
        # once as this returns, with the interpreter's lock held (``sliced_drop.py``)
        drop_sliced(events, vms, polls, operations, deliveries)
        return data

    def polls(self) -> list[VmPolls]:
        """Every VM's first and last poll (in a shared store, as merged from every
        front-end)."""
        return rx.polls_from_rows(self._read(_REACTION_SELECTS[self.dialect]["polls"]))

    # ---------------------------------------- Event Grid subscriptions and notices

    def eventgrid_subscriptions(self) -> list[str]:
        """Every Event Grid subscription kept (each as the JSON its hub wrote), by name."""
        return [
            str(body)
            for (body,) in self._read("SELECT body FROM eventgrid_subscriptions ORDER BY name")
        ]

    def save_eventgrid_subscription(self, name: str, body: str) -> None:
        """Keep a subscription (a new one, or one replaced or validated since)."""
        m = mark(self.dialect)
        self._write(
            f"INSERT INTO eventgrid_subscriptions (name, body) VALUES ({m}, {m})"
            " ON CONFLICT (name) DO UPDATE SET body = excluded.body",
            (name.lower(), body),
        )

    def delete_eventgrid_subscription(self, name: str) -> None:
        """Forget a subscription and the notices it had yet to deliver, in one transaction
        (nothing happens when none has this name)."""
        m = mark(self.dialect)
        self._write_together([
            (f"DELETE FROM eventgrid_subscriptions WHERE name = {m}", [(name.lower(),)]),
            (f"DELETE FROM eventgrid_pending WHERE subscription = {m}", [(name.lower(),)]),
        ])  # fmt: skip

    def eventgrid_pending(self) -> list[PendingRow]:
        """Every Event Grid notice kept as not yet delivered: ``(subscription, id, body,
        attempts, first_at, due_at)``, the soonest due first."""
        sql = f"SELECT {_PENDING_COLUMNS} FROM eventgrid_pending ORDER BY due_at, subscription, id"
        return [
            (str(sub), str(notice_id), str(body), int(attempts), float(first), float(due))
            for sub, notice_id, body, attempts, first, due in self._read(sql)
        ]

    def save_eventgrid_pending(
        self,
        keep: Sequence[PendingRow],
        drop: Sequence[tuple[str, str]],
        taken: Sequence[str] = (),
    ) -> None:
        """Keep notices (new ones, or their attempts and next due time since) and forget
        others (``(subscription, id)``: delivered, failed, dropped), and delete the
        outbox rows of the notices ``taken`` over (kept for each subscription by the same
        transaction), all in one transaction."""
        m = mark(self.dialect)
        self._write_together([
            (f"DELETE FROM eventgrid_pending WHERE subscription = {m} AND id = {m}",
             [(sub.lower(), notice_id) for sub, notice_id in drop]),
            (f"INSERT INTO eventgrid_pending ({_PENDING_COLUMNS})"
             f" VALUES ({m}, {m}, {m}, {m}, {m}, {m}) ON CONFLICT (subscription, id)"
             " DO UPDATE SET attempts = excluded.attempts, due_at = excluded.due_at",
             [(row[0].lower(), *row[1:]) for row in keep]),
            (f"DELETE FROM outbox WHERE id = {m}", [(notice_id,) for notice_id in taken]),
        ])  # fmt: skip

    # ----------------------------------------------------------------- outbox

    def outbox(self, channel: str) -> list[tuple[str, str]]:
        """What changes owe on ``channel`` and no reader took over yet: ``(id, body)``,
        in the order the changes were made."""
        order = "pos" if self.dialect == "postgresql" else "rowid"
        return [
            (str(message_id), str(body))
            for message_id, body in self._read(
                f"SELECT id, body FROM outbox WHERE channel = {mark(self.dialect)}"
                f" ORDER BY {order}",
                (channel,),
            )
        ]

    # -------------------------------------------------------------------- meta

    def _meta(self, key: str) -> str | None:
        rows = self._read(f"SELECT value FROM meta WHERE key = {mark(self.dialect)}", (key,))
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
        self._write(meta_upsert_sql(self.dialect), (key, value))

    def stored_fleet(self) -> dict[str, Any] | None:
        """The fleet this database was created with."""
        fleet = self._decoded_meta("fleet", "the stored fleet")
        if fleet is not None and not isinstance(fleet, dict):
            raise StoreError(f"database {self.where} is damaged: the stored fleet is not a mapping")
        return fleet

    def save_fleet(self, fleet: dict[str, Any]) -> None:
        """Remember the fleet (kept across restarts, so ``--fleet`` can be omitted; every
        process of a scaled-out fleet serves this one)."""
        self._save_meta("fleet", msgspec.json.encode(fleet).decode())

    def stored_settings(self) -> dict[str, Any]:
        """Server settings remembered with the fleet (clock kind, time scale)."""
        settings = self._decoded_meta("settings", "the stored settings")
        return settings if isinstance(settings, dict) else {}

    def save_settings(self, settings: dict[str, Any]) -> None:
        """Remember server settings that a restart (and every process) must keep."""
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
        """Save a virtual clock's position (durably, before anyone sees the new time; in a
        shared store it never moves back, whoever writes last)."""
        self._write(clock_sql(self.dialect), (repr(position),))
