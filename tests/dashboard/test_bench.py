"""bench/dashboard.py end to end at a toy size (the demo fleet, no polling load)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench import dashboard

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
