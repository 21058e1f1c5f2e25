"""``forewarn agent status`` where the agent has no ``metrics_bind`` to ask (issue 38):
what its state file knows, never a bare "unknown"."""

from __future__ import annotations

import json
from pathlib import Path

from forewarn.agent.state import State
from tests.support.cli import run_cli

T0 = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC


def _status(tmp_path: Path, *more: str) -> str:
    config = tmp_path / "agent.toml"
    config.write_text(f'state_path = "{tmp_path / "state.db"}"\nmetrics_bind = ""\n')
    result = run_cli(["agent", "status", "-c", str(config), *more])
    assert result.code == 0, result.stderr
    return result.stdout


def test_a_fresh_state_file_says_it_records_nothing_yet(tmp_path: Path) -> None:
    State(tmp_path / "state.db").close()
    first = _status(tmp_path).splitlines()[0]
    assert first == "agent: not asked (no metrics_bind); its state file records no event yet"


def test_the_state_file_s_last_entry_and_open_events(tmp_path: Path) -> None:
    state = State(tmp_path / "state.db")
    for n, gone in ((1, True), (2, False)):
        event_id = f"{n}2345678-ABCD-4EF0-8123-456789ABCDEF"
        state.seen(event_id, vm_name="web-0", rule="reboot", ignored=False,
                   event_type="Reboot", event={}, at=T0 + n)  # fmt: skip
        state.mark(event_id, "handled_at", T0 + 10 * n, "ok")
        if gone:
            state.mark(event_id, "gone_at", T0 + 600, None)
    state.close()
    expected = (
        "not asked (no metrics_bind); its state file last recorded 2027-01-15 08:10:00 UTC, "
        "1 event(s) not yet over"
    )
    assert _status(tmp_path).splitlines()[0] == f"agent: {expected}"
    assert json.loads(_status(tmp_path, "--json"))["ready"] == expected
