"""A million-VM fleet restarts in time linear in the fleet (issue 39): measured against the
100,000-VM fleet in the same run, as ``bench/fleet_startup.py`` does, on CPU time (what a
busy machine inflates least)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.fleet_startup import fleet_yaml, start_once
from tests.support.marks import slow


def _best_restart_cpu(root: Path, vms: int, runs: int = 2) -> tuple[float, float]:
    """The server's CPU time from process start until its endpoint answers, and the CPU
    time its banner says the command took after the interpreter's start and imports,
    best of ``runs`` restarts each (the fleet from the database, as after any restart)."""
    directory = root / f"fleet-{vms}"
    directory.mkdir()
    fleet = directory / "fleet.yaml"
    fleet.write_text(fleet_yaml(vms), encoding="utf-8")
    start_once(directory, ["--fleet", str(fleet)], timeout=300)
    starts = [start_once(directory, [], timeout=300) for _ in range(runs)]
    return min(s.cpu for s in starts), min(s.in_command for s in starts)


@slow
def test_a_million_vms_restart_within_a_small_multiple_of_100k(tmp_path: Path) -> None:
    small, small_said = _best_restart_cpu(tmp_path, 100_000)
    big, big_said = _best_restart_cpu(tmp_path, 999_999)
    # before issue 39: ~7.9 x (every VM built, and indexed three times, on every start);
    # the interpreter and imports (~1 s) are in both figures
    assert big <= 3 * small, f"1M VMs: {big:.2f} s of CPU; 100k: {small:.2f} s"
    # without them (some 14 ms of the command's own for one VM; 100k add ~12 ms, 1M
    # ~0.13 s: 5-7 x, the most beside the slow run's other tests): a start that grew with
    # the fleet's square would be far past this (30 x and more)
    assert big_said <= 12 * small_said, f"after the imports: {big_said:.3f} / {small_said:.3f} s"


def _check_cpu(root: Path, vms: int) -> float:
    """The CPU time of ``forewarn fleet check`` of a ``vms``-VM fleet file."""
    fleet = root / f"check-{vms}.yaml"
    fleet.write_text(fleet_yaml(vms), encoding="utf-8")
    before = os.times()
    subprocess.run(
        [sys.executable, "-m", "forewarn", "fleet", "check", str(fleet)],
        check=True, stdout=subprocess.DEVNULL, timeout=600,
    )  # fmt: skip
    after = os.times()
    used = after.children_user + after.children_system
    return used - before.children_user - before.children_system


@slow
def test_fleet_check_of_a_million_vms_costs_at_most_ten_times_100k(tmp_path: Path) -> None:
    small = min(_check_cpu(tmp_path, 100_000) for _ in range(2))
    big = _check_cpu(tmp_path, 999_999)
    # before: 80 s against 1.2 s (every run's hosts named again for each run)
    assert big <= 10 * small, f"1M VMs: {big:.2f} s of CPU; 100k: {small:.2f} s"
