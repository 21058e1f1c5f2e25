"""Repeatable drills from the command line, against a real server: ``fleet reset``,
``scenario run --reset`` (and ``reset: true`` in a scenario file), ``fault add|list|clear``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from forewarn.cli import main
from tests.cli.test_local_commands import assert_one_error_line
from tests.support.cli import Cli, run_cli
from tests.support.serveconfig import serve_runner
from tests.support.serverproc import VIRTUAL, ServerProcess, trigger

SPOTS = ["workers_0", "workers_1", "workers_2", "workers_3"]


def evict_all(cli: Cli) -> None:
    """Evict every Spot VM still there."""
    for vm in SPOTS:
        result = cli("trigger", "spot-eviction", vm)
        assert result.code == 0 or "has been deleted" in result.stderr, result.stderr
    assert cli("advance", "3600").code == 0


def test_spot_eviction_passes_again_after_a_reset_and_a_restart_keeps_it(
    start_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    server = start_server(VIRTUAL)

    def cli(*args: str) -> object:
        return run_cli(args, server.control_url)

    evict_all(cli)  # type: ignore[arg-type]
    failed = run_cli(["scenario", "run", "spot-eviction"], server.control_url)
    assert failed.code != 0 and "no live Spot VM" in failed.stdout + failed.stderr

    out = run_cli(["fleet", "reset"], server.control_url)
    assert out.code == 0, out.stderr
    assert "4 VM(s) back: workers_0, workers_1, workers_2, workers_3" in out.stdout
    played = run_cli(["scenario", "run", "spot-eviction"], server.control_url)
    assert played.code == 0, played.stdout + played.stderr

    history = json.loads(run_cli(["history", "--json"], server.control_url).stdout)
    assert "fleet.reset" in [h["kind"] for h in history]
    vms = server.control("GET", "/api/v1/vms").json()
    scopes = server.control("GET", "/api/v1/topology").json()["scopes"]
    incarnations = {s["id"]: s["incarnation"] for s in scopes}
    # reset once more, then a restart on the same database shows the reset state
    assert run_cli(["fleet", "reset", "--json"], server.control_url).code == 0
    server.stop()
    again = ServerProcess(server.db, VIRTUAL).start(timeout=90)
    try:
        assert again.control("GET", "/api/v1/events").json() == []
        assert again.control("GET", "/api/v1/operations").json() == []
        after = again.control("GET", "/api/v1/vms").json()
        assert {v["name"] for v in after if v["status"] == "running"} >= set(SPOTS)
        assert len(after) == len(vms)
        scopes = again.control("GET", "/api/v1/topology").json()["scopes"]
        for scope in scopes:  # one higher than before the second reset: never back
            assert scope["incarnation"] == incarnations[scope["id"]] + 1
    finally:
        again.stop()


def test_scenario_run_reset_flag_and_file_key(
    start_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    server = start_server(VIRTUAL)

    def cli(*args: str) -> object:
        return run_cli(args, server.control_url)

    evict_all(cli)  # type: ignore[arg-type]
    played = run_cli(["scenario", "run", "spot-eviction", "--reset"], server.control_url)
    assert played.code == 0, played.stdout + played.stderr

    evict_all(cli)  # type: ignore[arg-type]
    drill = tmp_path / "drill.yaml"
    drill.write_text(
        "reset: true\n"
        "steps:\n"
        "  - {do: spot-eviction, on: workers_0, as: evict}\n"
        "  - {wait: ended, for: evict, within: 30m}\n"
        "expect: [{vm: workers_0, status: deleted}, {operation: evict, state: completed}]\n"
    )
    played = run_cli(["scenario", "run", str(drill)], server.control_url)
    assert played.code == 0, played.stdout + played.stderr


def test_faulted_requests_show_in_the_report(cli: Cli, server: ServerProcess) -> None:
    assert cli("fault", "add", "status", "--status", "503", "--vm", "web-0").code == 0
    web0 = server.control("GET", "/api/v1/vms").json()[0]
    assert web0["name"] == "web-0"
    for _ in range(3):
        assert server.imds(vm_address=web0["address"]).status_code == 503
    assert cli("fault", "clear").code == 0
    assert server.imds(vm_address=web0["address"]).status_code == 200
    out = cli("report").stdout
    assert "Endpoint faults and how each VM coped" in out
    assert "3 faulted requests (3 status)" in out and "asked again after" in out


def test_fault_commands(cli: Cli) -> None:
    assert "no fault injected" in cli("fault", "list").stdout
    added = cli("fault", "add", "status", "--status", "410", "--vm", "web-0", "--for", "70")
    assert added.code == 0, added.stderr
    assert added.stdout.startswith("fault-1: status vm web-0 HTTP 410 70 s")
    assert cli("fault", "add", "latency", "--latency", "2", "--share", "0.5").code == 0
    listed = json.loads(cli("fault", "list", "--json").stdout)
    assert [f["kind"] for f in listed] == ["status", "latency"]
    table = cli("fault", "list").stdout
    assert "fault-1" in table and "HTTP 410" in table and "+2.0 s" in table

    cli("fault", "add", "status", "--status", "418").assert_one_error_line("418")
    cli("fault", "add", "status").assert_one_error_line("needs status")
    cli("fault", "add", "reset", "--vm", "nope").assert_one_error_line("nope")
    cli("fault", "add", "timeout", "--for", "-3").assert_one_error_line("must not be negative")
    cli("fault", "clear", "fault-99").assert_one_error_line("fault-99")

    assert cli("fault", "clear", "fault-1").stdout.strip() == "cleared fault-1"
    assert cli("fault", "clear").stdout.strip() == "cleared 1 fault(s)"
    assert json.loads(cli("fault", "list", "--json").stdout) == []


def test_fault_windows_are_platform_time_at_any_time_scale(
    start_server: Callable[..., ServerProcess],
) -> None:
    """``--for 60`` at ``--time-scale 60`` is one second of the server's clock, as every
    platform duration; the window as given is kept in platform time."""
    server = start_server((*VIRTUAL, "--time-scale", "60"))

    def cli(*args: str) -> Any:
        return run_cli(args, server.control_url)

    added = cli("fault", "add", "status", "--status", "500", "--vm", "web-0", "--for", "60")
    assert added.code == 0, added.stderr
    added = cli("fault", "add", "timeout", "--vm", "web-1", "--for", "5m", "--after", "PT1M")
    assert added.code == 0, added.stderr
    assert "5m" not in added.stdout and "300 s" in added.stdout
    first, second = json.loads(cli("fault", "list", "--json").stdout)
    assert first["ends_at"] - first["starts_at"] == pytest.approx(1.0)
    assert first["duration_seconds"] == pytest.approx(60.0)
    assert second["ends_at"] - second["starts_at"] == pytest.approx(5.0)
    assert second["starts_at"] - first["starts_at"] == pytest.approx(1.0)  # after 1 min
    web0 = server.control("GET", "/api/v1/vms").json()[0]
    assert server.imds(vm_address=web0["address"]).status_code == 500
    assert cli("advance", "1").code == 0  # a minute of platform time: over
    assert server.imds(vm_address=web0["address"]).status_code == 200
    assert [f["id"] for f in json.loads(cli("fault", "list", "--json").stdout)] == ["fault-2"]


#: What a person may type for a duration, and its seconds.
DURATIONS = [("90", 90.0), ("90s", 90.0), ("5m", 300.0), ("1h", 3600.0), ("1h30m", 5400.0),
             ("PT5M", 300.0), ("P1DT2H", 93600.0)]  # fmt: skip
#: What is no duration.
NOT_DURATIONS = ["5 parsecs", "5y", "PT", "P1M", "m5", "nan", "-3s"]


@pytest.fixture
def in_process(
    server: ServerProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Result]:
    """The CLI run in this process against ``server`` (no interpreter start: many runs
    in a blink), with no FOREWARN_* variable from outside."""
    runner = serve_runner(tmp_path, monkeypatch)
    return lambda *args: runner.invoke(main, ["--control", server.control_url, *args])


def test_one_duration_syntax_in_the_cli_and_the_control_api(
    cli: Cli, server: ServerProcess, in_process: Callable[..., Result]
) -> None:
    for given, seconds in DURATIONS:
        out = in_process("fault", "add", "timeout", "--vm", "web-1", "--for", given, "--json")
        assert out.exit_code == 0, out.output
        assert json.loads(out.stdout)["duration_seconds"] == pytest.approx(seconds)
        sent: str | float = float(given) if given.isdigit() else given  # a number as one
        body = {"kind": "reset", "duration_seconds": sent, "after_seconds": sent}
        answer = server.control("POST", "/api/v1/faults", json=body)
        assert answer.status_code == 201, answer.text
        fault = answer.json()
        assert fault["duration_seconds"] == pytest.approx(seconds)
        assert fault["ends_at"] - fault["starts_at"] == pytest.approx(seconds)
        assert in_process("fault", "clear").exit_code == 0
    out = cli("fault", "add", "latency", "--latency", "1.5s", "--json")
    assert out.code == 0 and json.loads(out.stdout)["latency_seconds"] == 1.5, out.stderr
    assert cli("advance", "PT1M").code == 0
    assert cli("trigger", "user-reboot", "web-0", "--notice", "20m").code == 0


def test_a_bad_duration_is_a_clear_error_and_changes_nothing(
    cli: Cli, server: ServerProcess, in_process: Callable[..., Result]
) -> None:
    def refused(fragment: str, *args: str) -> None:
        assert_one_error_line(in_process(*args), 2, fragment)  # a usage error: nothing sent

    now = server.control("GET", "/api/v1/clock").json()["now"]
    for given in NOT_DURATIONS:
        refused("--for", "fault", "add", "timeout", "--for", given)
        answer = server.control("POST", "/api/v1/faults",
                                json={"kind": "timeout", "duration_seconds": given})  # fmt: skip
        assert answer.status_code == 400, given
        assert "duration_seconds" in answer.json()["error"]
        refused("SECONDS", "advance", given)
        refused("--notice", "trigger", "user-reboot", "web-0", "--notice", given)
    for given in ["0s", "PT0S", "90", "5m\n", "100d", "1e3s"]:  # the API: text with a unit
        answer = server.control("POST", "/api/v1/faults",
                                json={"kind": "timeout", "duration_seconds": given})  # fmt: skip
        assert answer.status_code == 400, given
    assert cli("fault", "add", "timeout", "--for", "pt1h30m").code == 0  # the CLI: any case
    assert cli("fault", "clear").code == 0
    assert server.control("GET", "/api/v1/faults").json() == []
    assert server.control("GET", "/api/v1/clock").json()["now"] == now
    assert server.control("GET", "/api/v1/operations").json() == []


def test_a_drills_verdict_is_the_same_after_a_reset_and_the_next_drill_has_its_own(
    cli: Cli, server: ServerProcess
) -> None:
    """A drill with an eviction, a user reboot approved in time, a VM under injected 500s
    and one that never polls: its report is the same after ``fleet reset`` as before, and
    the report of the drill after the reset holds none of it (faults included)."""
    address = {v["name"]: v["address"] for v in server.control("GET", "/api/v1/vms").json()}

    def poll(*vms: str) -> list[int]:
        return [server.imds(vm_address=address[vm]).status_code for vm in vms]

    start = server.control("GET", "/api/v1/clock").json()["now"]
    pollers = [vm for vm in address if vm != "jumpbox"]
    assert set(poll(*pollers)) == {200}
    assert (
        cli("fault", "add", "status", "--status", "500", "--vm", "web-2", "--for", "2m").code == 0
    )
    assert cli("trigger", "spot-eviction", "workers_0").code == 0
    reboot = trigger(server, "user-reboot", "web-0")
    assert cli("advance", "5s").code == 0
    assert poll("web-2", "web-2") == [500, 500]
    assert set(poll("web-0", "workers_0")) == {200}
    body = {"StartRequests": [{"EventId": reboot}]}
    assert server.imds("POST", vm_address=address["web-0"], json=body).status_code == 200
    assert cli("advance", "1h").code == 0

    def report(since: float) -> dict[str, Any]:
        out = cli("report", "--json", "--since", repr(since))
        assert out.code == 0, out.stderr
        data: dict[str, Any] = json.loads(out.stdout)
        return data

    before = report(start)
    assert [f["vm"] for f in before["faults"]] == ["web-2"]
    assert before["totals"]["ok"] >= 1
    said = cli("fleet", "reset").stdout.splitlines()
    assert said[0].endswith("1 VM(s) back: workers_0")
    assert said[1].startswith("the next drill's report: forewarn report --since ")
    after = report(start)
    assert after == before
    next_drill = report(float(server.control("GET", "/api/v1/clock").json()["now"]))
    told = json.loads(cli(*said[1].split()[5:], "--json").stdout)
    assert told["since"] <= next_drill["since"] < told["since"] + 1e-5
    assert {**told, "since": None} == {**next_drill, "since": None}
    assert next_drill["faults"] == [] and next_drill["events"] == []
    assert next_drill["operations"] == []
