"""The store room's own error, shared by both stores and the schema code."""

from __future__ import annotations

__all__ = ["StoreError", "first_line"]


class StoreError(Exception):
    """The database cannot be used (wrong schema, damaged, unreadable, in use)."""


def first_line(exc: BaseException) -> str:
    """The first line of a driver's error message (or its type, if it says nothing)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
