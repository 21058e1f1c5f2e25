"""A throwaway PostgreSQL database per test, on the server at 127.0.0.1:5432.

Each database has a random name and is dropped (connections and all) afterwards. When no
server answers, the tests that need one skip and say why; CI starts one (``.ci/run``).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import psycopg
import pytest

__all__ = ["ADMIN_URL", "PgDatabase", "pg_available", "pg_database"]

#: The server the tests use (trust authentication, user postgres).
ADMIN_URL = os.environ.get("FOREWARN_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


def _admin() -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=3)


def pg_available() -> str | None:
    """None when the test server answers, else why not."""
    try:
        with _admin():
            return None
    except psycopg.Error as exc:
        return f"no PostgreSQL at {ADMIN_URL} ({str(exc).strip().splitlines()[0]})"


class PgDatabase:
    """One database created for a test; ``url`` connects to it."""

    def __init__(self) -> None:
        self.name = f"forewarn_test_{secrets.token_hex(6)}"
        base, _, _ = ADMIN_URL.rpartition("/")
        self.url = f"{base}/{self.name}"
        with _admin() as admin:
            admin.execute(f'CREATE DATABASE "{self.name}"')

    def connect(self) -> psycopg.Connection[tuple[object, ...]]:
        """An autocommit connection to this database (to inspect or damage it)."""
        return psycopg.connect(self.url, autocommit=True)

    def execute(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        """Run one statement; its rows (if any)."""
        with self.connect() as conn:
            cur = conn.execute(sql.encode() if not args else sql, args or None)
            return cur.fetchall() if cur.description else []

    def drop(self) -> None:
        with _admin() as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


def pg_database() -> Iterator[PgDatabase]:
    """Fixture body: a new database, dropped after the test (skips without a server)."""
    reason = pg_available()
    if reason is not None:
        pytest.skip(reason)
    database = PgDatabase()
    try:
        yield database
    finally:
        database.drop()
