"""What the agent has done, in a local SQLite file, so a restart redoes nothing finished.

One row per event (seen, handled, approved, saw Started, missed, gone, recovered, with
times) and one per handler run (started, finished, result). A run with a start and no
finish was interrupted by a crash: the restart reports it and retries or fails it as the
rule says. Writes are durable (WAL, synchronous=FULL) before the agent acts on them: the
row that says a handler finished is on disk before the agent acts on its result.

Alone, every write commits at once. The daemon opens the file with ``group_commit``: the
writes of one turn of its loop share one transaction, committed at the start of the next
turn, and a flow that must not act before its write is on disk awaits ``durable()``. A
document of 10,000 events then costs a few fsyncs per step of all its flows, not one per
event per step, each on the loop that answers /healthz.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import asyncio
    from pathlib import Path

__all__ = ["EventRecord", "RunRecord", "State", "StateError"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    event_id TEXT PRIMARY KEY,
    vm_name TEXT NOT NULL,
    rule TEXT NOT NULL,
    ignored INTEGER NOT NULL,
    event_type TEXT NOT NULL,
    event_json TEXT NOT NULL,
    first_seen REAL NOT NULL,
    handled_at REAL,
    outcome TEXT,
    approved_at REAL,
    approval TEXT,
    started_seen_at REAL,
    missed_at REAL,
    gone_at REAL,
    recovered_at REAL
);
CREATE TABLE IF NOT EXISTS runs (
    event_id TEXT NOT NULL,
    phase TEXT NOT NULL,
    position INTEGER NOT NULL,
    handler TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    started_at REAL NOT NULL,
    finished_at REAL,
    result TEXT,
    detail TEXT,
    pid INTEGER,
    pid_start TEXT,
    PRIMARY KEY (event_id, phase, position)
);
"""

_EVENT_COLUMNS = (
    "event_id, vm_name, rule, ignored, event_type, event_json, first_seen, handled_at, "
    "outcome, approved_at, approval, started_seen_at, missed_at, gone_at, recovered_at"
)


class StateError(Exception):
    """The state file cannot be opened or written."""


class EventRecord(NamedTuple):
    """One event as the agent remembers it."""

    event_id: str
    vm_name: str
    rule: str
    ignored: bool
    event_type: str
    event: dict[str, Any]
    first_seen: float
    handled_at: float | None
    outcome: str | None
    approved_at: float | None
    approval: str | None
    started_seen_at: float | None
    missed_at: float | None
    gone_at: float | None
    recovered_at: float | None


class RunRecord(NamedTuple):
    """One handler run of an event's phase."""

    position: int
    handler: str
    attempt: int
    started_at: float
    finished_at: float | None
    result: str | None
    detail: str | None
    #: The handler's latest process (its group's leader) and its start time, if it ran one.
    pid: int | None = None
    pid_start: str | None = None

    @property
    def interrupted(self) -> bool:
        """Started and never finished: the agent died while it ran."""
        return self.finished_at is None


def _record(row: tuple[Any, ...]) -> EventRecord:
    values = list(row)
    values[3] = bool(values[3])
    values[5] = json.loads(values[5])
    return EventRecord(*values)


class State:
    """The agent's memory; ``path=":memory:"`` keeps nothing (dry runs).

    With ``group_commit`` (made inside a running asyncio loop), writes join one
    transaction committed on the next turn of the loop; ``await durable()`` waits for it."""

    def __init__(self, path: str | Path, *, group_commit: bool = False) -> None:
        self.path = str(path)
        self._loop: asyncio.AbstractEventLoop | None = None
        if group_commit:  # the daemon's: ``agent status`` reads without loading asyncio
            import asyncio

            self._loop = asyncio.get_running_loop()
        #: Resolved by the commit that makes the writes so far durable (None: nothing open).
        self._commit_due: asyncio.Future[None] | None = None
        try:
            if self.path != ":memory:":
                os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=10)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(runs)")}
            for column, kind in (("pid", "INTEGER"), ("pid_start", "TEXT")):
                if column not in columns:  # a state file from an older agent
                    self._db.execute(f"ALTER TABLE runs ADD COLUMN {column} {kind}")
        except (sqlite3.Error, OSError) as exc:
            raise StateError(f"state file {self.path}: {exc}") from None

    def close(self) -> None:
        """Commit what is still open (best effort: only milestones nobody awaited) and close."""
        try:
            with contextlib.suppress(StateError):
                self.commit()
        finally:
            self._db.close()

    def _write(self, sql: str, params: tuple[Any, ...]) -> None:
        try:
            if self._loop is not None and self._commit_due is None:
                self._db.execute("BEGIN")
                self._commit_due = self._loop.create_future()
                self._loop.call_soon(self._commit_quietly)
            self._db.execute(sql, params)
        except sqlite3.Error as exc:
            raise StateError(f"state file {self.path}: {exc}") from None

    def commit(self) -> None:
        """Make every write so far durable now (one transaction, one fsync)."""
        due, self._commit_due = self._commit_due, None
        if due is None:
            return
        try:
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            failure = StateError(f"state file {self.path}: {exc}")
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            if not due.done():
                due.set_exception(failure)
                due.exception()  # retrieved: a failure nobody awaited is not logged twice
            raise failure from None
        if not due.done():
            due.set_result(None)

    def _commit_quietly(self) -> None:
        """The loop's turn after the writes: commit (a failure goes to ``durable()``)."""
        with contextlib.suppress(StateError):
            self.commit()

    async def durable(self) -> None:
        """Return once every write so far is on disk (at once without ``group_commit``)."""
        if self._commit_due is not None:
            import asyncio

            await asyncio.shield(self._commit_due)

    # ------------------------------------------------------------ events

    def event(self, event_id: str) -> EventRecord | None:
        row = self._db.execute(
            f"SELECT {_EVENT_COLUMNS} FROM events WHERE event_id = ?", (event_id,)
        ).fetchone()
        return _record(row) if row else None

    def events(self, open_only: bool = False) -> list[EventRecord]:
        """Every remembered event, oldest first (only those not gone, if asked)."""
        where = "WHERE gone_at IS NULL" if open_only else ""
        rows = self._db.execute(
            f"SELECT {_EVENT_COLUMNS} FROM events {where} ORDER BY first_seen, event_id"
        ).fetchall()
        return [_record(r) for r in rows]

    def seen(
        self,
        event_id: str,
        *,
        vm_name: str,
        rule: str,
        ignored: bool,
        event_type: str,
        event: dict[str, Any],
        at: float,
    ) -> None:
        """Remember a new event as first seen, and the rule that took it (once)."""
        self._write(
            "INSERT INTO events (event_id, vm_name, rule, ignored, event_type, event_json, "
            "first_seen) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING",
            (event_id, vm_name, rule, int(ignored), event_type, json.dumps(event), at),
        )

    def mark(self, event_id: str, column: str, at: float, detail: str | None = None) -> None:
        """Set one of the event's milestones (once: a later call keeps the first time)."""
        detail_column = {"handled_at": "outcome", "approved_at": "approval"}.get(column)
        if column not in (
            "handled_at",
            "approved_at",
            "started_seen_at",
            "missed_at",
            "gone_at",
            "recovered_at",
        ):
            raise ValueError(f"unknown milestone {column}")
        if detail_column:
            self._write(
                f"UPDATE events SET {column} = ?, {detail_column} = ? "
                f"WHERE event_id = ? AND {column} IS NULL",
                (at, detail, event_id),
            )
        else:
            self._write(
                f"UPDATE events SET {column} = ? WHERE event_id = ? AND {column} IS NULL",
                (at, event_id),
            )

    def note_approval(self, event_id: str, note: str) -> None:
        """Why the event was not approved (kept once)."""
        self._write(
            "UPDATE events SET approval = ? WHERE event_id = ? AND approval IS NULL",
            (note, event_id),
        )

    # ------------------------------------------------------------ handler runs

    def runs(self, event_id: str, phase: str) -> dict[int, RunRecord]:
        rows = self._db.execute(
            "SELECT position, handler, attempt, started_at, finished_at, result, detail, pid, "
            "pid_start FROM runs WHERE event_id = ? AND phase = ? ORDER BY position",
            (event_id, phase),
        ).fetchall()
        return {row[0]: RunRecord(*row) for row in rows}

    def run_started(self, event_id: str, phase: str, position: int, handler: str, at: float) -> int:
        """Record a start (on disk before the handler runs); returns the attempt number."""
        previous = self.runs(event_id, phase).get(position)
        attempt = previous.attempt + 1 if previous else 1
        self._write(  # (a new attempt forgets the previous attempt's process)
            "INSERT OR REPLACE INTO runs (event_id, phase, position, handler, attempt, "
            "started_at) VALUES (?, ?, ?, ?, ?, ?)",
            (event_id, phase, position, handler, attempt, at),
        )
        return attempt

    def run_process(
        self, event_id: str, phase: str, position: int, pid: int, pid_start: str
    ) -> None:
        """The run started a process (on disk at once: a crash may orphan it)."""
        self._write(
            "UPDATE runs SET pid = ?, pid_start = ? "
            "WHERE event_id = ? AND phase = ? AND position = ?",
            (pid, pid_start, event_id, phase, position),
        )
        self.commit()

    def run_finished(
        self, event_id: str, phase: str, position: int, result: str, detail: str, at: float
    ) -> None:
        self._write(
            "UPDATE runs SET finished_at = ?, result = ?, detail = ? "
            "WHERE event_id = ? AND phase = ? AND position = ?",
            (at, result, detail, event_id, phase, position),
        )

    def prune(self, before: float) -> int:
        """Forget events gone before ``before``; returns how many."""
        ids = [
            r[0]
            for r in self._db.execute(
                "SELECT event_id FROM events WHERE gone_at IS NOT NULL AND gone_at < ?", (before,)
            )
        ]
        for event_id in ids:
            self._write("DELETE FROM runs WHERE event_id = ?", (event_id,))
            self._write("DELETE FROM events WHERE event_id = ?", (event_id,))
        return len(ids)
