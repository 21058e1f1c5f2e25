"""The grading's big tables are let go a slice at a time, the interpreter's lock given back
between (the event loop's turn): what only a table held is freed in pieces, never a
million rows in one call of C as the function that made them returns."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from forewarn.rehearsal import (
    EventFacts,
    ReactionData,
    VmReaction,
    facts,
    grade,
    grading,
    sliced_drop,
    sliced_sort,
)
from forewarn.rehearsal.collector import collector_paused
from forewarn.rehearsal.sliced_drop import drop_sliced
from forewarn.rehearsal.verdict_memo import VerdictKey, VerdictMemo

T0 = 1_700_000_000.0
VMS = 4000  # the drill's VMs: a table of a row a VM freed at once is 4,000 objects or more
SMALL_SLICE = 64  # and records (rows of tens of objects) a quarter of it
#: The most objects freed between two turns: a slice of rows of a few objects, or a
#: quarter slice of records (an event graded, its VM's verdict and notes: some 20 objects)
PIECE = SMALL_SLICE * 10


class _Row:
    """A row that says when it is freed."""

    def __init__(self, freed: list[int]) -> None:
        self.freed = freed

    def __del__(self) -> None:
        self.freed.append(1)


def test_each_table_is_emptied_a_slice_of_rows_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sliced_drop, "SLICE", 64)
    freed: list[int] = []
    turns: list[int] = []  # rows freed by each turn given
    monkeypatch.setattr(sliced_drop, "give_way", lambda: turns.append(len(freed)))
    rows = [_Row(freed) for _ in range(1000)]
    by_name = {f"vm-{i}": _Row(freed) for i in range(700)}
    seen = {_Row(freed) for _ in range(300)}
    kept = rows[10]  # held elsewhere too: not freed
    drop_sliced(rows, by_name, seen)
    assert rows == [] and by_name == {} and seen == set()
    assert len(freed) == 1999 and turns[-1] == 1999  # every row freed before the last turn
    pieces = [b - a for a, b in zip([0, *turns], turns, strict=False)]
    assert max(pieces) <= 64 and len(turns) >= 1999 // 64
    assert kept.freed is freed
    records = [_Row(freed) for _ in range(100)]
    turns.clear()
    drop_sliced(records, rows=10)  # rows of many objects each: fewer a turn
    assert records == [] and len(turns) == 10 and turns[-1] == 2099


def _region_drill(vms: int) -> ReactionData:
    """An event a VM, none seen (a region rollout none of whose VMs polls)."""
    names = [f"web{i // 100}-{i % 100}" for i in range(vms)]
    return ReactionData(
        events=[EventFacts(
            id=f"e-{n}", operation_id=f"op-{i // 500}", kind="host-update", scope_id=n[:-3],
            event_type="Freeze", source="Platform", resources=(n,), created_at=T0 + i,
            not_before=T0 + i + 900, started_at=T0 + i + 900, start_reason="not_before",
        ) for i, n in enumerate(names)],
        vms=[VmReaction(event_id=f"e-{n}", vm=n, incarnation=1) for n in names],
    )  # fmt: skip


class _Falls:
    """How many objects were freed, net, between each turn given and the one before."""

    def __init__(self) -> None:
        self.seen: list[int] = []
        self._last = sys.getallocatedblocks()

    def turn(self) -> None:
        now = sys.getallocatedblocks()
        self.seen.append(self._last - now)
        self._last = now


@pytest.fixture
def falls(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Falls]:
    """Each turn the grading gives, counted (small slices: a few thousand VMs make many)."""
    falls = _Falls()
    for module in (sliced_drop, sliced_sort):
        monkeypatch.setattr(module, "SLICE", SMALL_SLICE)
        monkeypatch.setattr(module, "give_way", falls.turn)
    for module in (sliced_drop, grading, facts):
        monkeypatch.setattr(module, "RECORDS", SMALL_SLICE // 4)
    with collector_paused():  # as on the tracker's thread: no collection frees a heap meanwhile
        yield falls


def test_the_grading_lets_its_tables_go_in_pieces(falls: _Falls) -> None:
    data = _region_drill(VMS)
    falls.turn()
    report = grade(data, now=T0 + 86400)
    falls.turn()  # what it freed from its last turn on, as it returned
    turns = len(falls.seen) - 1
    data.let_go()
    assert data.empty()
    assert len(report.vms) == VMS and report.totals["fail"] == VMS  # every VM missed its event
    assert turns > VMS // SMALL_SLICE  # it gave way as it went
    assert max(falls.seen[1:]) < PIECE  # a dict of reactions a VM, a tuple a row: in pieces


def test_a_kept_verdict_is_let_go_in_pieces(falls: _Falls) -> None:
    memo = VerdictMemo(keep_seconds=0.0)
    key = VerdictKey(since=None, stale_after=60.0, now=T0 + 86400, writes=1,
                     deleted=frozenset(), fleet=None)  # fmt: skip
    report = memo.verdict(key, lambda: grade(_region_drill(VMS), now=T0 + 86400))
    assert len(report.vms) == VMS
    del report
    falls.turn()
    start = len(falls.seen)
    assert not memo.forget_idle()  # nobody asked for it since: let go
    falls.turn()
    pieces = falls.seen[start:]
    assert len(pieces) > VMS // SMALL_SLICE and max(pieces) < PIECE
