"""Durable state behind the fabric's ``Store`` interface (SQLite now, PostgreSQL later),
and the journal that writes it off the event loop."""

from forewarn.store.sqlite import SCHEMA_VERSION, SQLiteStore, StoreError
from forewarn.store.writer import ThreadedJournal

__all__ = ["SCHEMA_VERSION", "SQLiteStore", "StoreError", "ThreadedJournal"]
