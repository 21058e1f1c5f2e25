"""The benchmark scripts end to end at toy sizes, against a real ``forewarn serve``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import fleet_tail, instructions, operations_rate, region_rollout
from tests.scaleout.pg import ADMIN_URL, pg_available


def _report(p99: float, p999: float, peak: float, errors: int = 0) -> dict[str, Any]:
    return {
        "latency": {"p50_ms": 0.5, "p99_ms": p99, "p99_9_ms": p999, "max_ms": peak},
        "statuses": {"200": 1000}, "error_total": errors,
        "approvals": {"errors": 0, "statuses": {}},
    }  # fmt: skip


def _run(server: str, index: int, p99: float, p999: float, peak: float, **kw: Any) -> Any:
    report = _report(p99, p999, peak)
    cpu, rss = kw.get("cpu", 30.0), kw.get("rss", 90_000_000)
    return fleet_tail.Run(server, index, report, cpu, rss, 0.0, 50.0, 0.0, kw.get("problems", []))


def test_targets_compare_each_forewarn_run_with_the_canned_run_of_its_pair() -> None:
    runs = [
        _run("forewarn", 1, 3.0, 9.0, 20.0),
        _run("canned", 1, 2.0, 4.0, 9.0),
        _run("forewarn", 2, 5.0, 30.0, 80.0, cpu=70.0),
        _run("canned", 2, 2.0, 5.0, 9.0),
        # an invalid run counts for nothing, however bad it looks
        _run("forewarn", 3, 900.0, 900.0, 900.0, problems=["generator send lag"]),
        _run("canned", 3, 1.0, 1.0, 1.0),
    ]
    verdicts = {name: (measured, verdict) for name, measured, verdict in fleet_tail.targets(runs)}
    assert verdicts["p99 <= 2 x canned (same run)"] == ("1.50-2.50", "MISS")
    assert verdicts["p99.9 <= 3 x canned (same run)"] == ("2.25-6.00", "MISS")
    assert verdicts["max <= 50 ms"] == ("20.0 ms-80.0 ms", "MISS")
    assert verdicts["CPU <= 50 % of one core"] == ("30 %-70 %", "MISS")
    assert verdicts["RSS <= 200 MB"] == ("90 MB", "PASS")
    assert verdicts["errors = 0"] == ("0", "PASS")
    only_invalid = fleet_tail.targets([runs[4], runs[5]])
    assert {verdict for _, _, verdict in only_invalid} == {"n/a"}


def test_fleet_tail_runs_a_rollout_with_approvals_under_load(
    fleetgen: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _forewarn_window(tmp_path)
    report = run["report"]
    assert run["server"] == "forewarn" and run["rollout"]["batches_created"] == 1
    assert report["requests"] == report["offered"] == 180  # 60 VMs x 1 Hz x 3 s
    assert report["error_total"] == 0
    # avset-0 is in the first update domain and approves the event that lists it
    assert report["approvals"]["sent"] >= 1
    assert set(report["approvals"]["statuses"]) == {"200"}
    assert run["cpu_percent"] > 0 and run["rss_bytes"] > 10_000_000
    printed = capsys.readouterr().out
    assert "target (issue 5)" in printed and "1 forewarn" in printed


def _forewarn_window(tmp_path: Path, *options: str) -> dict[str, Any]:
    """One 3 s forewarn window of 60 VMs with ``options``; its run as --json wrote it."""
    out = tmp_path / "runs.json"
    code = fleet_tail.main([
        "--vms", "60", "--avset", "20", "--seconds", "3", "--runs", "1", "--rollout-at", "1",
        "--only", "forewarn", "--max-lag-ms", "1000", "--max-wait", "100", "--json", str(out),
        *options,
    ])  # fmt: skip
    assert code == 0
    (run,) = json.loads(out.read_text())
    assert run["problems"] == [] and run["rollout"]["status"] == 201
    assert run["report"]["statuses"] == {"200": 180}
    return dict(run)


def test_fleet_tail_holds_dashboard_streams_and_fetches_the_report(
    fleetgen: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _forewarn_window(tmp_path, "--streams", "5", "--report-every", "1")
    board = run["dashboard"]
    assert board["streams"] == board["still_open"] == 5
    assert [f["at"] for f in board["reports"]] == [0, 1, 2]
    assert {f["status"] for f in board["reports"]} == {200}
    assert all(f["bytes"] > 1000 and f["ms"] > 0 for f in board["reports"])
    assert "5 streams opened, 5 still open" in capsys.readouterr().out


@pytest.mark.skipif(pg_available() is not None, reason=str(pg_available()))
def test_fleet_tail_serves_from_postgresql_with_two_workers(
    fleetgen: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _forewarn_window(tmp_path, "--store", ADMIN_URL, "--workers", "2")
    workers = run["workers"]
    assert len({w["pid"] for w in workers}) == 2
    assert all(w["cpu_percent"] > 0 and w["rss_bytes"] > 10_000_000 for w in workers)
    assert run["cpu_percent"] == pytest.approx(sum(w["cpu_percent"] for w in workers), abs=0.2)
    assert run["rss_bytes"] == sum(w["rss_bytes"] for w in workers)
    assert run["gc"]["collections"][0] > 0  # each worker's collector was watched
    assert all(p["pid"] in {w["pid"] for w in workers} for p in run["gc"]["pauses"])
    assert "PostgreSQL, 2 front-end(s)" in capsys.readouterr().out


def test_operations_rate_measures_each_level(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = operations_rate.main(
        ["--levels", "20,60", "--sample", "20", "--vms", "100", "--connections", "2"]
    )
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    rates = [line for line in lines if "live operations:" in line]
    assert len(rates) == 2
    assert "ratio 1.00" in rates[0]
    assert rates[1].split()[-1] in {"PASS", "MISS"}


@pytest.mark.parametrize("server", ["forewarn", "canned"])
async def test_instructions_fleet_mode_answers_every_poll_after_the_warm_up(server: str) -> None:
    # 250 VMs each on its own connection, polled in turn after three polls each: every
    # poll counted is answered, on its VM's connection.
    assert await instructions.drive(server, "fleet", 500, vms=250) == 500


def test_region_rollout_measures_each_size(capsys: pytest.CaptureFixture[str]) -> None:
    region_rollout.main(
        ["--sizes", "600,6000", "--seconds", "1", "--time-scale", "6000", "--sample", "10",
         "--waves", "5", "--wave-vms", "20"]
    )  # fmt: skip
    lines = capsys.readouterr().out.splitlines()
    sizes = [line for line in lines if " VMs (waves of " in line]
    assert [line.split()[0] for line in sizes] == ["600", "6,000"]
    assert all("first events" in line and "events/s back to back" in line for line in sizes)
    (ratios,) = [line for line in lines if line.startswith("6,000 / 600: first events")]
    assert "throughput" in ratios and "rollout p99" in ratios
    assert lines[-1] in {"goal: PASS", "goal: MISS"}
