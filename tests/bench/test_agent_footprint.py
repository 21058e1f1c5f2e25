"""bench/agent_footprint.py end to end at toy sizes: every figure is printed beside its
baseline from the same run (the agent of this venv, then of the zipapp the bench builds,
against the bench's own endpoint)."""

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
    agent_footprint.main(["--install", "wheel", "--vm-venv", sys.prefix,
                          "--only", "poll,memory,soak",
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


def test_the_zipapp_runs_every_measured_process(capsys: pytest.CaptureFixture[str]) -> None:
    """Built from a wheel of a copy of this checkout by .ci/vm_zipapp.py, run by ``python -I``
    of a venv holding nothing: its agent polls, its soak child runs its agent, its
    commands start (a command that failed to run would still be timed: its output is read)."""
    agent_footprint.main(["--install", "zipapp", "--only", "poll,soak,startup",
                          "--seconds", "1", "--soak-polls", "300", "--runs", "1"])  # fmt: skip
    out = capsys.readouterr().out
    assert re.search(r"== the zipapp install: \S+/bin/python -I \S+forewarn-vm\.pyz", out)
    polls = POLL.findall(out)
    assert [name for name, _, _ in polls] == [
        "default config", "metrics+kubernetes (no coordination: no extras)",
        "default config, an endpoint that sends no ETag"]  # fmt: skip
    assert all(int(agent) > 0 and int(base) > 0 for _, agent, base in polls)
    soak = re.search(r"soak: (\d+) polls ", out)
    assert soak is not None and int(soak.group(1)) >= 300
    assert "start-up, zipapp install" in out and "forewarn watch (first line)" in out
