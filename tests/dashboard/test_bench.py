"""bench/dashboard.py end to end at a toy size (the demo fleet, no polling load)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench import dashboard
from forewarn.fleet.loader import build_topology, load_fleet_file

pytestmark = pytest.mark.skipif(
    not os.path.exists(dashboard.CHROMIUM), reason="no Chromium (.ci/run installs it)"
)

DEMO = Path(__file__).resolve().parents[2] / "src/forewarn/fleet/demo-fleet.yaml"


def test_the_dashboard_benchmark_measures_render_and_updates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "dashboard.json"
    code = dashboard.main([
        "--fleet", str(DEMO), "--renders", "1", "--trials", "2", "--no-load", "--observe", "1",
        "--json", str(out),
    ])  # fmt: skip
    assert code == 0
    results = json.loads(out.read_text())
    assert results["vms"] == 14 and results["polling"] is False
    assert len(results["first_render_ms"]) == 1 and results["first_render_ms"][0] > 0
    assert len(results["event_appears_ms"]) == len(results["event_started_ms"]) == 2
    assert all(0 < ms < 30_000 for ms in results["event_appears_ms"])
    assert results["snapshot_bytes"] > 1000
    printed = capsys.readouterr().out
    assert "| first render" in printed and "| trigger to the event drawn" in printed


@pytest.mark.parametrize("vms", [1000, 10_000])
def test_the_benchmark_fleet_has_the_asked_size_and_the_thousand_shape(
    tmp_path: Path, vms: int
) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(dashboard.fleet_yaml(vms), encoding="utf-8")
    topology = build_topology(load_fleet_file(fleet))
    assert len(topology.vms) == vms
    kinds = {scope.kind for scope in topology.scopes.values()}
    assert {"availability_set", "scale_set", "standalone"} <= {k.value for k in kinds}
    assert max(len(scope.vm_names) for scope in topology.scopes.values()) <= 200
    assert sum(vm.spot for vm in topology.vms.values()) == vms * 3 // 20


def test_the_benchmark_refuses_a_fleet_too_small_to_shape() -> None:
    assert dashboard.main(["--vms", "10"]) == 2
    with pytest.raises(ValueError, match="at least 100"):
        dashboard.fleet_yaml(10)
