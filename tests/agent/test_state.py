"""The state file: what a restart finds (finished runs, interrupted runs, milestones)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from forewarn.agent.state import State, StateError


def test_milestones_and_runs_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "state.db"
    state = State(path)
    state.seen("E1", vm_name="web-0", rule="r", ignored=False, event_type="Reboot",
               event={"EventId": "E1", "EventStatus": "Scheduled"}, at=100.0)  # fmt: skip
    state.seen("E1", vm_name="web-0", rule="other", ignored=True, event_type="Reboot",
               event={"EventId": "E1", "EventStatus": "Started"}, at=200.0)  # fmt: skip
    assert state.run_started("E1", "prepare", 0, "drain", 101.0) == 1
    state.run_finished("E1", "prepare", 0, "ok", "drained", 102.0)
    assert state.run_started("E1", "prepare", 1, "notify", 103.0) == 1
    state.mark("E1", "handled_at", 104.0, "ok")
    state.mark("E1", "handled_at", 999.0, "failed")  # a milestone is kept once
    state.note_approval("E1", "not approved: solo")
    state.close()

    again = State(path)
    record = again.event("E1")
    assert record is not None
    assert (record.rule, record.ignored, record.first_seen) == ("r", False, 100.0)
    assert record.event == {"EventId": "E1", "EventStatus": "Scheduled"}  # as first seen
    assert (record.handled_at, record.outcome) == (104.0, "ok")
    assert record.approved_at is None and record.approval == "not approved: solo"
    runs = again.runs("E1", "prepare")
    assert not runs[0].interrupted and runs[0].result == "ok" and runs[0].detail == "drained"
    assert runs[1].interrupted and runs[1].attempt == 1
    assert again.run_started("E1", "prepare", 1, "notify", 110.0) == 2  # retry after a crash
    assert [r.event_id for r in again.events(open_only=True)] == ["E1"]
    again.mark("E1", "gone_at", 120.0)
    assert again.events(open_only=True) == []
    assert again.prune(before=121.0) == 1
    assert again.event("E1") is None and again.runs("E1", "prepare") == {}
    with pytest.raises(ValueError, match="unknown milestone"):
        again.mark("E1", "event_id; DROP TABLE events", 1.0)
    again.close()


def test_an_unusable_path_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(StateError, match=r"state file .*file/state\.db"):
        State(tmp_path / "file" / "state.db")


def _count(path: Path, where: str = "") -> int:
    """What another process sees: committed rows only."""
    with sqlite3.connect(path) as other:
        return int(other.execute(f"SELECT count(*) FROM events {where}").fetchone()[0])


async def test_grouped_writes_of_a_turn_share_one_commit_that_durable_awaits(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    state = State(path, group_commit=True)
    for n in range(1000):
        state.seen(f"E{n}", vm_name="web-0", rule="r", ignored=False, event_type="Reboot",
                   event={"EventId": f"E{n}"}, at=100.0)  # fmt: skip
    state.mark("E7", "handled_at", 101.0, "ok")
    assert state.event("E7") is not None  # the agent reads its own writes at once
    assert _count(path) == 0  # not on disk yet: one commit on the loop's next turn
    await state.durable()
    assert _count(path) == 1000 and _count(path, "WHERE handled_at = 101.0") == 1
    await state.durable()  # nothing open: returns at once
    state.mark("E8", "gone_at", 102.0)
    state.close()  # commits what nobody awaited
    assert _count(path, "WHERE gone_at IS NOT NULL") == 1
