"""Durable state behind the fabric's ``Store`` interface (SQLite, or PostgreSQL shared by a
scaled-out fleet), and the journal that writes it off the event loop."""

from forewarn.store.errors import StoreError
from forewarn.store.sqlite import SCHEMA_VERSION, SQLiteStore
from forewarn.store.writer import ThreadedJournal, yield_to_the_loop

__all__ = ["SCHEMA_VERSION", "SQLiteStore", "StoreError", "ThreadedJournal", "yield_to_the_loop"]
