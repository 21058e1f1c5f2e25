"""Opening a PostgreSQL database for forewarn: connect, migrate, check that it is whole.

Migrations are numbered SQL files shipped in ``forewarn/store/migrations``; the ones a
database lacks are applied in one transaction under an advisory lock, so several
processes starting at once apply each exactly once. A database that has a migration this
forewarn does not know (written by a newer version) is refused, never half-used.
"""

from __future__ import annotations

import re

import psycopg
from psycopg import conninfo

from forewarn.store.errors import StoreError, first_line
from forewarn.store.schema import migrations

__all__ = [
    "LEADER_LOCK",
    "MIGRATION_LOCK",
    "REQUIRED_TABLES",
    "connect",
    "display_url",
    "is_postgres_url",
    "migrate",
]

#: Advisory lock keys (per database): schema migrations, and the fleet's leadership.
MIGRATION_LOCK = 0x666F_7265_7761_726E  # "forewarn"
LEADER_LOCK = MIGRATION_LOCK + 1

REQUIRED_TABLES = (
    "meta",
    "operations",
    "events",
    "rollouts",
    "scopes",
    "deleted_vms",
    "history",
    "leader",
    "changes",
    "approval_requests",
    "scope_requests",
    "members",
    "reaction_events",
    "reaction_vms",
    "reaction_polls",
    "reaction_operations",
    "reaction_deliveries",
    "eventgrid_subscriptions",
    "eventgrid_pending",
    "outbox",
)


def is_postgres_url(text: str) -> bool:
    """True for a ``postgresql://`` (or ``postgres://``) connection URL."""
    return text.startswith(("postgresql://", "postgres://"))


def display_url(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    try:
        params = conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return re.sub(r"//([^:/@]*):[^@]*@", r"//\1:***@", url)
    user = f"{params['user']}@" if params.get("user") else ""
    host = str(params.get("host") or "localhost")
    port = f":{params['port']}" if params.get("port") else ""
    return f"postgresql://{user}{host}{port}/{params.get('dbname') or ''}"


def connect(url: str, *, timeout: float = 10.0) -> psycopg.Connection[tuple[object, ...]]:
    """An autocommit connection, or ``StoreError`` saying why there is none."""
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(timeout)))
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect to {display_url(url)}: {first_line(exc)}") from None


def migrate(conn: psycopg.Connection[tuple[object, ...]], where: str) -> int:
    """Apply the migrations ``conn``'s database lacks; returns its schema version."""
    known = migrations()
    latest = known[-1][0]
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version INT PRIMARY KEY, name TEXT NOT NULL,"
                " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )
            rows = conn.execute("SELECT version FROM schema_migrations").fetchall()
            applied = {int(str(v)) for (v,) in rows}
            if applied and max(applied) > latest:
                raise StoreError(
                    f"database {where} has schema migration {max(applied)}, this forewarn "
                    f"knows up to {latest}: upgrade forewarn"
                )
            for version, name, sql in known:
                if version in applied:
                    continue
                try:
                    conn.execute(sql.encode())
                except psycopg.Error as exc:
                    raise StoreError(
                        f"cannot apply migration {name} to {where}: {first_line(exc)}"
                    ) from None
                conn.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                    (version, name),
                )
    except psycopg.Error as exc:
        raise StoreError(f"cannot prepare database {where}: {first_line(exc)}") from None
    missing = [
        table
        for table in REQUIRED_TABLES
        if conn.execute("SELECT to_regclass(%s)", (table,)).fetchone() == (None,)
    ]
    if missing:
        raise StoreError(
            f"database {where} is damaged: table {', '.join(missing)} is missing; "
            "restore it from a backup or start a new database"
        )
    return latest
