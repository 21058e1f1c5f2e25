"""Durable state behind the fabric's ``Store`` interface (SQLite now, PostgreSQL later),
and the journal that writes it off the event loop."""

from .sqlite import SCHEMA_VERSION, SQLiteStore, StoreError
from .writer import ThreadedJournal

__all__ = ["SCHEMA_VERSION", "SQLiteStore", "StoreError", "ThreadedJournal"]
