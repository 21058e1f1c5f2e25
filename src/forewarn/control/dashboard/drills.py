"""Where each drill began: the times of the fleet's resets, for the dashboard.

After ``forewarn fleet reset`` the dashboard shows the drill since the last reset (the
verdict's ``since``, as ``forewarn report --since``) and lets the operator look back at
an earlier one. The resets are ``fleet.reset`` history entries; the history is read once
from its start, then only what was added since (``after`` its last sequence number), so
a snapshot costs a read of the entries written since the previous one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from forewarn.fabric import HistoryEntry
from forewarn.rehearsal.tracker import RESET_KIND

__all__ = ["ResetLog"]

#: History entries read per page.
PAGE = 5000


class ResetLog:
    """The times of every fleet reset so far, oldest first (blocking: reads the store)."""

    def __init__(self, history: Callable[..., list[HistoryEntry]]) -> None:
        """``history`` is ``Fabric.history`` (``after``, ``limit``: oldest first)."""
        self._history = history
        self._lock = threading.Lock()
        self._seq = 0
        self._times: list[float] = []

    def times(self) -> list[float]:
        """Every reset's time, read up to now (call off the event loop)."""
        with self._lock:
            while True:
                page: list[Any] = self._history(after=self._seq, limit=PAGE)
                if not page:
                    break
                self._seq = page[-1].seq
                self._times.extend(e.at for e in page if e.kind == RESET_KIND)
                if len(page) < PAGE:
                    break
            return list(self._times)
