"""bench/agent_footprint.py end to end at toy sizes: every figure is printed beside its
baseline from the same run (the agent of this venv, against the bench's own endpoint)."""

from __future__ import annotations

import re
import sys

import pytest

from bench import agent_footprint

POLL = re.compile(
    r"CPU per unchanged poll, (.+): agent [\d.]+ ms \((\d+) polls\), "
    r"baseline http.client loop [\d.]+ ms \((\d+) polls\): [\d.]+ x"
)


def test_each_figure_has_its_baseline_and_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    agent_footprint.main(["--vm-venv", sys.prefix, "--only", "poll,memory,soak",
                          "--seconds", "1", "--soak-polls", "300"])  # fmt: skip
    out = capsys.readouterr().out
    polls = POLL.findall(out)
    assert [name for name, _, _ in polls] == [
        "default config", "coordination+metrics+kubernetes",
        "default config, an endpoint that sends no ETag"]  # fmt: skip
    assert all(int(agent) > 0 and int(base) > 0 for _, agent, base in polls)
    assert re.search(r"idle memory, default config: agent RSS [\d.]+ MB, private [\d.]+ MB .*"
                     r"floor \(import asyncio, sqlite3\) [\d.]+ / [\d.]+ MB", out)  # fmt: skip
    soak = re.search(r"soak: (\d+) polls .*? (\d+) log lines", out)
    assert soak is not None and int(soak.group(1)) >= 300
    assert int(soak.group(2)) < 10  # nothing is logged per unchanged poll
