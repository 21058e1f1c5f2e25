"""The dashboard's resets (``ResetLog``): when each drill began, read from the store's
history, the resets of other processes included, and never the whole history again."""

from __future__ import annotations

from typing import Any

from forewarn.control.dashboard.drills import ResetLog
from forewarn.fabric import HistoryEntry
from tests.support.fabrics import make_fabric, submit


def test_the_resets_are_every_drills_start_read_from_the_store_once() -> None:
    fabric = make_fabric()
    returned: list[HistoryEntry] = []

    def history(**filters: Any) -> list[HistoryEntry]:
        entries = fabric.history(**filters)
        returned.extend(entries)
        return entries

    log = ResetLog(history)
    assert log.times() == []
    submit(fabric, "user-reboot", "web-0")
    fabric.advance(3600)
    fabric.reset()
    submit(fabric, "host-update", host="host-3")
    fabric.advance(60)
    fabric.reset()
    resets = [h.at for h in fabric.history(limit=100_000) if h.kind == "fleet.reset"]
    assert len(resets) == 2 and resets[0] < resets[1]

    returned.clear()
    assert log.times() == resets
    # the resets and the history's last entry: none of the operations' entries
    assert {h.kind for h in returned} == {"fleet.reset"}
    returned.clear()
    assert log.times() == resets  # no reset twice
    assert [h.kind for h in returned] == ["fleet.reset"]  # (the last entry: the reset)

    submit(fabric, "user-reboot", "web-1")
    fabric.advance(60)
    fabric.reset()
    third = fabric.history(newest=True, limit=1)[0]
    assert log.times() == [*resets, third.at]
    assert ResetLog(fabric.history).times() == [*resets, third.at]  # another process's view
