"""The schema, written once: the numbered SQL files in ``forewarn/store/migrations``.

PostgreSQL applies every file in turn (``postgres_schema.migrate``). The SQLite store
holds the tables of all but the scale-out's (0002): the platform's state, the reactions,
Event Grid's subscriptions and pending notices, the outbox of what changes owe. It
creates them from the same files put into SQLite's words: ``BYTEA`` is ``BLOB``, ``DOUBLE
PRECISION`` is ``REAL``, an identity key is ``INTEGER PRIMARY KEY AUTOINCREMENT``, and
the ``pos`` column PostgreSQL needs to keep insertion order goes (SQLite's ``rowid`` keeps
it). A type this translation has no
word for is refused at import, so a new shared migration cannot give the two stores
different tables unnoticed.
"""

from __future__ import annotations

import re
import sqlite3
from importlib import resources
from typing import Literal

__all__ = [
    "SQLITE_ADDED_COLUMNS",
    "SQLITE_MIGRATIONS",
    "SQLITE_SCHEMA",
    "Dialect",
    "add_sqlite_columns",
    "mark",
    "migrations",
    "to_sqlite",
]

#: The two SQL dialects the stores speak.
Dialect = Literal["sqlite", "postgresql"]

#: The migrations whose tables the SQLite store holds too (0002 is the scale-out's alone).
SQLITE_MIGRATIONS = (1, 3, 4, 5, 6, 7, 8, 9, 10)

#: ``ALTER TABLE t ADD COLUMN c ...;``: SQLite has no ``IF NOT EXISTS`` for it, so these
#: leave the script and the store adds each column its table lacks (``added_columns``).
_ADD_COLUMN = re.compile(r"\bALTER TABLE (\w+) ADD COLUMN (\w+)[^;]*;")

_MIGRATION_NAME = re.compile(r"(\d{4})_[a-z0-9_]+\.sql")

_COMMENT = re.compile(r"--[^\n]*")

_TO_SQLITE = (
    (re.compile(r"\bpos BIGINT GENERATED ALWAYS AS IDENTITY,\s*"), ""),
    (
        re.compile(r"\bBIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY\b"),
        "INTEGER PRIMARY KEY AUTOINCREMENT",
    ),
    (re.compile(r"\bBIGINT\b"), "INTEGER"),
    (re.compile(r"\bDOUBLE PRECISION\b"), "REAL"),
    (re.compile(r"\bBYTEA\b"), "BLOB"),
    # A database of an older forewarn lacks the newer tables: the script fills them in.
    (re.compile(r"\bCREATE (TABLE|INDEX) "), r"CREATE \1 IF NOT EXISTS "),
)

_POSTGRES_ONLY = re.compile(
    r"\b(GENERATED|IDENTITY|SERIAL|BIGSERIAL|JSONB?|TIMESTAMPTZ|TIMESTAMP|INT|BOOLEAN)\b|::"
)


def mark(dialect: Dialect) -> str:
    """The dialect's parameter mark."""
    return "%s" if dialect == "postgresql" else "?"


def migrations() -> list[tuple[int, str, str]]:
    """(version, file name, SQL) of every shipped migration, in order."""
    folder = resources.files("forewarn.store") / "migrations"
    found = []
    for entry in folder.iterdir():
        match = _MIGRATION_NAME.fullmatch(entry.name)
        if match is not None:
            found.append((int(match[1]), entry.name, entry.read_text(encoding="utf-8")))
    found.sort()
    return found


def to_sqlite(sql: str) -> str:
    """A PostgreSQL migration's DDL in SQLite's words (comments dropped); ``ValueError``
    for what SQLite has no word for."""
    out = _ADD_COLUMN.sub("", _COMMENT.sub("", sql))
    for pattern, replacement in _TO_SQLITE:
        out = pattern.sub(replacement, out)
    leftover = _POSTGRES_ONLY.search(out)
    if leftover is not None:
        raise ValueError(f"no SQLite word for {leftover[0]!r} in a shared migration")
    return "\n".join(line for line in out.splitlines() if line.strip()) + "\n"


def added_columns(sql: str) -> list[tuple[str, str, str]]:
    """(table, column, SQLite DDL) of each column a migration adds to a table."""
    out = []
    for match in _ADD_COLUMN.finditer(_COMMENT.sub("", sql)):
        ddl = match[0]
        for pattern, replacement in _TO_SQLITE:
            ddl = pattern.sub(replacement, ddl)
        out.append((match[1], match[2], ddl))
    return out


#: Every column the SQLite store's migrations add to their tables, in order.
SQLITE_ADDED_COLUMNS = tuple(
    column
    for version, _, sql in migrations()
    if version in SQLITE_MIGRATIONS
    for column in added_columns(sql)
)

#: Every table and index of the SQLite store (each ``IF NOT EXISTS``).
SQLITE_SCHEMA = "".join(
    to_sqlite(sql) for version, _, sql in migrations() if version in SQLITE_MIGRATIONS
)


def add_sqlite_columns(db: sqlite3.Connection) -> None:
    """Give the tables of a SQLite database the columns later migrations added (a
    database of an older forewarn lacks them; a new one gets them here too)."""
    for table, column, ddl in SQLITE_ADDED_COLUMNS:
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if have and column not in have:
            db.execute(ddl)
