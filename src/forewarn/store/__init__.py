"""Durable state behind the fabric's ``Store`` interface (SQLite now, PostgreSQL later)."""

from .sqlite import SCHEMA_VERSION, SQLiteStore, StoreError

__all__ = ["SCHEMA_VERSION", "SQLiteStore", "StoreError"]
