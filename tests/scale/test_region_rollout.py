"""A region rollout's first events at a million VMs come within a small multiple of the
100,000-VM figure (issue 39 point 2): planning walks the fleet once, off the event loop,
and the first wave costs what a wave costs. Measured as ``bench/region_rollout.py`` does,
on real servers: from sending the request until the first wave's VM sees its event."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

from bench.fleet_startup import ENV, answers, fleet_yaml, free_port, stop
from bench.region_rollout import _first_events, _up
from tests.support.marks import slow


def _first_events_seconds(root: Path, vms: int) -> float:
    """Seconds from a region rollout's request until the first wave's VM (the fleet's
    default VM: host-1, update domain 0) sees its event, on a server just started."""
    directory = root / f"fleet-{vms}"
    directory.mkdir(exist_ok=True)
    fleet = directory / "fleet.yaml"
    fleet.write_text(fleet_yaml(vms), encoding="utf-8")
    imds, control = free_port(), free_port()
    command = [
        sys.executable, "-m", "forewarn", "serve", "--db", str(directory / f"{time.time()}.db"),
        "--fleet", str(fleet), "--clock", "virtual", "--enablement", "always",
        "--rate-limit", "0", "--imds-bind", f"127.0.0.1:{imds}",
        "--control-bind", f"127.0.0.1:{control}",
    ]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    try:
        began = time.perf_counter()
        while not (answers(imds) and _up(control)):
            assert proc.poll() is None and time.perf_counter() - began < 300, "no server"
            time.sleep(0.05)
        seen, _ = asyncio.run(_first_events(imds, control, 100))
        return seen
    finally:
        stop(proc)


@slow
def test_a_region_rollouts_first_events_at_1m_within_a_small_multiple_of_100k(
    tmp_path: Path,
) -> None:
    small = min(_first_events_seconds(tmp_path, 100_000) for _ in range(2))
    big = min(_first_events_seconds(tmp_path, 999_999) for _ in range(2))
    # one pass over the fleet (the walk, ~10 x) and a first wave the same at both sizes:
    # linear with room for a neighbour's slice; a walk that grew faster than the fleet, or
    # a rollout that listed every VM up front, would pass it by far
    assert big <= 12 * small, f"1M VMs: {big:.2f} s to first events; 100k: {small:.2f} s"
