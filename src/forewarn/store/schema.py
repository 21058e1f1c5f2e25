"""The schema, written once: the numbered SQL files in ``forewarn/store/migrations``.

PostgreSQL applies every file in turn (``postgres_schema.migrate``). The SQLite store
holds the tables of two of them, the platform's state (0001) and the reactions (0003),
and creates them from the same files put into SQLite's words: ``BYTEA`` is ``BLOB``,
``DOUBLE PRECISION`` is ``REAL``, an identity key is ``INTEGER PRIMARY KEY AUTOINCREMENT``,
and the ``pos`` column PostgreSQL needs to keep insertion order goes (SQLite's ``rowid``
keeps it). A type this translation has no word for is refused at import, so a new shared
migration cannot give the two stores different tables unnoticed.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import Literal

__all__ = ["SQLITE_MIGRATIONS", "SQLITE_SCHEMA", "Dialect", "mark", "migrations", "to_sqlite"]

#: The two SQL dialects the stores speak.
Dialect = Literal["sqlite", "postgresql"]

#: The migrations whose tables the SQLite store holds too (0002 is the scale-out's alone).
SQLITE_MIGRATIONS = (1, 3, 4)

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
    out = _COMMENT.sub("", sql)
    for pattern, replacement in _TO_SQLITE:
        out = pattern.sub(replacement, out)
    leftover = _POSTGRES_ONLY.search(out)
    if leftover is not None:
        raise ValueError(f"no SQLite word for {leftover[0]!r} in a shared migration")
    return "\n".join(line for line in out.splitlines() if line.strip()) + "\n"


#: Every table and index of the SQLite store (each ``IF NOT EXISTS``).
SQLITE_SCHEMA = "".join(
    to_sqlite(sql) for version, _, sql in migrations() if version in SQLITE_MIGRATIONS
)
