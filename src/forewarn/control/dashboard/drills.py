"""Where each drill began: the times of the fleet's resets, for the dashboard.

After ``forewarn fleet reset`` the dashboard shows the drill since the last reset (the
verdict's ``since``, as ``forewarn report --since``) and lets the operator look back at
an earlier one. The resets are the history's ``RESET_KIND`` entries, which the store
finds (``history(kind=...)``): a snapshot reads the resets written since the history's
end as the previous one saw it, never the entries in between.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from forewarn.fabric import RESET_KIND, HistoryEntry

__all__ = ["ResetLog"]

#: History entries read per page.
PAGE = 5000


class ResetLog:
    """The times of every fleet reset so far, oldest first (blocking: reads the store)."""

    def __init__(self, history: Callable[..., list[HistoryEntry]]) -> None:
        """``history`` is ``Fabric.history`` (``after``, ``limit``, ``kind``, ``newest``)."""
        self._history = history
        self._lock = threading.Lock()
        self._seq = 0
        self._times: list[float] = []

    def times(self) -> list[float]:
        """Every reset's time, read up to now (call off the event loop)."""
        with self._lock:
            newest = self._history(limit=1, newest=True)  # the end, before the resets
            while True:
                page = self._history(after=self._seq, kind=RESET_KIND, limit=PAGE)
                if not page:
                    break
                self._seq = page[-1].seq
                self._times.extend(e.at for e in page)
                if len(page) < PAGE:
                    break
            if newest:  # what came before the end held no other reset: read past it
                self._seq = max(self._seq, newest[-1].seq)
            return list(self._times)
