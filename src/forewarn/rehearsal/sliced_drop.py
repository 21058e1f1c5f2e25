"""Letting a million rows go off the event loop without holding it.

Freeing is reference counting, in C, with the interpreter's lock held from the first
object to the last: the last reference to a table of a million rows dropped frees them
all before the thread that dropped it runs another line. The grading's own tables (a
dict of a million dicts, each VM's lines, the sort keys of a million names, the rows read
from the store) were freed so when the functions that made them returned, on the
tracker's thread: the event loop, and every VM's poll with it, waited 0.35-0.48 s at a
million VMs (py-spy: that thread ``active+gil`` on the line that had just returned, the
loop's waiting). ``drop_sliced`` empties each table ``SLICE`` rows at a time instead,
giving the lock back between, so what only the table held is freed in pieces.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["RECORDS", "SLICE", "drop_sliced", "give_way"]

#: Rows sorted, or let go, at a time with the lock held (some 5-20 ms of C at this size).
SLICE = 1 << 15
#: Rows let go at a time when each is tens of objects (a VM's verdict, an event's facts):
#: 32,768 verdict rows are some 650,000 objects, 0.1 s of freeing at a million VMs.
RECORDS = 1 << 11


def give_way() -> None:
    """Let another thread (the event loop) take the interpreter's lock."""
    time.sleep(0)


def drop_sliced(*tables: list[Any] | dict[Any, Any] | set[Any], rows: int = 0) -> None:
    """Empty each of ``tables``, ``rows`` (``SLICE`` unless given) at a time, the lock
    given back between: a row nothing else holds is freed then (a row that is a table of
    its own is freed whole: hand big ones in themselves; rows of tens of objects each
    want ``RECORDS``)."""
    step = rows or SLICE
    for table in tables:
        if isinstance(table, list):
            while table:
                del table[-step:]  # from the end: nothing left to move down
                give_way()
            continue
        take = table.popitem if isinstance(table, dict) else table.pop
        while table:
            for _ in range(min(step, len(table))):
                take()
            give_way()
