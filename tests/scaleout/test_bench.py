"""The scale-out benchmark runs end to end and prints one row per configuration."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scaleout.pg import ADMIN_URL, pg_available
from tests.support.marks import SLOW

pytestmark = SLOW

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "scaleout.py"


def test_the_benchmark_measures_every_configuration() -> None:
    if shutil.which("wrk") is None:
        pytest.skip("wrk is not installed (apt-get install wrk)")
    if (reason := pg_available()) is not None:
        pytest.skip(reason)
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--seconds", "1", "--rounds", "1", "--trials", "2",
         "--vms", "100", "--workers", "1", "2", "--pg", ADMIN_URL],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    rows = re.findall(
        r"^\| (baseline \(SQLite, 1\)|store, \d front-ends?) +\| +(\d+) .*"
        r"\| +([\d.]+) / +([\d.]+) ms \| +([\d.]+) / +([\d.]+) ms \| ([\d.]+ ms|-) \|$",
        out.stdout,
        re.MULTILINE,
    )
    assert [r[0] for r in rows] == [
        "baseline (SQLite, 1)",
        "store, 1 front-end",
        "store, 2 front-ends",
    ]
    for _, rate, *latencies, _lag in rows:
        assert int(rate) > 0 and all(float(x) > 0 for x in latencies)
    assert [r[-1] == "-" for r in rows] == [True, True, False]  # followers measure their lag
