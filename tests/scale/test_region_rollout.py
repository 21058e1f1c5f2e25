"""A region rollout's first events at a million VMs come within a small multiple of the
100,000-VM figure (issue 39 point 2): planning walks the fleet once, off the event loop,
and the first wave costs what a wave costs. Measured as ``bench/region_rollout.py`` does,
on real servers: from sending the request until the first wave's VM sees its event."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from bench.fleet_startup import fleet_yaml, virtual_server
from bench.region_rollout import _first_events
from tests.support.marks import slow


def _first_events_seconds(root: Path, vms: int) -> float:
    """Seconds from a region rollout's request until the first wave's VM (the fleet's
    default VM: host-1, update domain 0) sees its event, on a server just started."""
    directory = root / f"fleet-{vms}"
    directory.mkdir(exist_ok=True)
    fleet = directory / "fleet.yaml"
    fleet.write_text(fleet_yaml(vms), encoding="utf-8")
    with virtual_server(fleet, directory / f"{time.time()}.db") as (_, imds, control):
        seen, _ = asyncio.run(_first_events(imds, control, 100))
        return seen


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
