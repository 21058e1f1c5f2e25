"""Commands that talk to a running server, run as a user runs them (a child process)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from forewarn.fabric import Changes, HistoryEntry
from forewarn.store import SQLiteStore
from tests.support.cli import Cli, run_cli
from tests.support.serverproc import VIRTUAL, ServerProcess, free_port

EVENT_ID = r"[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}"
TRIGGERED = re.compile(
    rf"^(op-[0-9a-f]{{12}}): user-reboot on vm web-0 \(scheduled\), "
    rf"NotBefore (\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d) UTC, events ({EVENT_ID})\n$"
)


def json_out(cli: Cli, *args: str) -> Any:
    result = cli(*args, "--json")
    assert result.code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def triggered(cli: Cli, server: ServerProcess) -> dict[str, str]:
    """``forewarn trigger user-reboot web-0``: its operation and event ids."""
    result = cli("trigger", "user-reboot", "web-0")
    assert (result.code, result.stderr) == (0, "")
    match = TRIGGERED.match(result.stdout)
    assert match, result.stdout
    return {"op": match[1], "not_before": match[2], "event": match[3]}


def test_trigger_prints_the_operation_and_event_ids(
    server: ServerProcess, triggered: dict[str, str]
) -> None:
    op = server.control("GET", f"/api/v1/operations/{triggered['op']}").json()
    assert op["event_ids"] == [triggered["event"]]
    not_before = datetime.fromtimestamp(op["not_before"], tz=UTC)
    assert not_before.strftime("%Y-%m-%d %H:%M:%S") == triggered["not_before"]


def test_trigger_json_prints_the_operation(cli: Cli, server: ServerProcess) -> None:
    op = json_out(cli, "trigger", "host-update", "host-2", "--description", "Patch")
    assert op == server.control("GET", f"/api/v1/operations/{op['id']}").json()
    assert op["target"] == "host host-2"
    events = server.control("GET", "/api/v1/events").json()
    assert {e["description"] for e in events} == {"Patch"}


def test_trigger_options_reach_the_event(cli: Cli, server: ServerProcess) -> None:
    op = json_out(cli, "trigger", "live-migration", "web-2", "--notice", "1800", "--duration", "7")
    (event,) = server.control("GET", "/api/v1/events").json()
    assert event["not_before"] - event["created_at"] == 1800
    assert (event["duration_seconds"], event["operation_id"]) == (7, op["id"])


def test_events_json_lists_the_triggered_event(cli: Cli, triggered: dict[str, str]) -> None:
    (event,) = json_out(cli, "events")
    assert (event["id"], event["operation_id"]) == (triggered["event"], triggered["op"])
    assert (event["status"], event["type"], event["resources"]) == (
        "Scheduled",
        "Reboot",
        ["web-0"],
    )


def test_events_table_shows_the_event(cli: Cli, triggered: dict[str, str]) -> None:
    result = cli("events")
    assert result.code == 0
    assert triggered["event"] in result.stdout
    assert "Scheduled" in result.stdout
    assert "web-0" in result.stdout


def test_events_table_keeps_event_ids_whole_in_80_columns(
    cli: Cli, triggered: dict[str, str]
) -> None:
    assert triggered["event"] in cli("events", columns=80).stdout


def test_events_as_a_vm_shows_its_document(cli: Cli, triggered: dict[str, str]) -> None:
    document = json_out(cli, "events", "--as", "web-3", "--api-version", "2017-03-01")
    (event,) = document["Events"]
    assert document["DocumentIncarnation"] == 2
    assert (event["EventId"], event["Resources"]) == (triggered["event"], ["_web-0"])
    assert "Description" not in event
    newest = json_out(cli, "events", "--as", "web-3")
    assert newest["Events"][0]["Resources"] == ["web-0"]
    assert newest["Events"][0]["EventSource"] == "User"


def test_events_as_a_vm_prints_a_table(cli: Cli, triggered: dict[str, str]) -> None:
    result = cli("events", "--as", "web-3")
    assert result.code == 0
    assert "web-3: DocumentIncarnation 2" in result.stdout
    assert triggered["event"] in result.stdout


@pytest.mark.parametrize(
    "steps",
    [
        [("approve", "Started")],
        [("start", "Started")],
        [("cancel", "Canceled")],
        [("start", "Started"), ("complete", "Completed")],
        [("approve", "Started"), ("complete", "Completed")],
    ],
    ids=lambda steps: "-then-".join(action for action, _ in steps),
)
def test_event_commands_print_the_new_status(
    cli: Cli, server: ServerProcess, triggered: dict[str, str], steps: list[tuple[str, str]]
) -> None:
    event_id = triggered["event"]
    for action, status in steps:
        result = cli(action, event_id)
        assert (result.code, result.stderr) == (0, "")
        assert result.stdout == f"{event_id}: {status}\n"
    live = server.control("GET", f"/api/v1/events/{event_id}")
    assert live.status_code == (200 if status == "Started" else 404)
    if status == "Started":
        assert live.json()["status"] == "Started"


def test_advance_moves_the_virtual_clock_and_fires_timers(
    cli: Cli, server: ServerProcess, triggered: dict[str, str]
) -> None:
    before = server.control("GET", "/api/v1/clock").json()["now"]
    result = cli("advance", "900")
    assert result.code == 0
    iso = datetime.fromtimestamp(before + 900, tz=UTC).isoformat()
    assert result.stdout == f"clock: {iso}\n"
    (event,) = json_out(cli, "events")
    assert event["status"] == "Started"


def test_topology_prints_every_vm_and_scope_kind(cli: Cli, server: ServerProcess) -> None:
    result = cli("topology")
    assert result.code == 0
    topology = server.control("GET", "/api/v1/topology").json()
    for scope in topology["scopes"]:
        assert scope["kind"] in result.stdout
        for vm in scope["vms"]:
            assert re.search(rf"\b{re.escape(vm['name'])}\b.*\b{vm['address']}\b", result.stdout)
    assert json_out(cli, "topology") == topology


def test_history_prints_the_transitions(cli: Cli, triggered: dict[str, str]) -> None:
    result = cli("history")
    assert result.code == 0
    for text in ("operation.created", "event.scheduled", triggered["event"]):
        assert text in result.stdout
    entries = json_out(cli, "history")
    assert [e["kind"] for e in entries] == ["operation.created", "event.scheduled"]
    assert json_out(cli, "history", "--limit", "1") == entries[-1:]


def test_history_shows_the_newest_entries_of_a_long_history(
    start_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    db = tmp_path / "long.db"
    store = SQLiteStore(db)
    store.apply(Changes(history=[HistoryEntry(at=0.0, kind="filler")] * 10_050))
    store.close()
    server = start_server(VIRTUAL, db=db)
    assert run_cli(["trigger", "user-reboot", "web-0"], server.control_url).code == 0
    result = run_cli(["history", "--limit", "1", "--json"], server.control_url)
    (entry,) = json.loads(result.stdout)
    assert entry["kind"] == "event.scheduled"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["trigger", "reboot-everything", "web-0"], "reboot-everything"),
        (["trigger", "user-reboot", "web-99"], "'web-99' is neither a VM, a host nor a scope"),
        (["trigger", "user-reboot", "host-1"], "name a VM, not a host"),
        (["trigger", "user-reboot", "web-0", "--notice", "5"], "below the minimum"),
        (["cancel", "NO-SUCH-EVENT"], "no live event with id 'NO-SUCH-EVENT' (HTTP 404)"),
        (["approve", "NO-SUCH-EVENT"], "no live event with id 'NO-SUCH-EVENT'"),
        (["complete", "NO-SUCH-EVENT"], "no live event with id 'NO-SUCH-EVENT'"),
        (["events", "--as", "web-99"], "no VM named 'web-99'"),
        (["events", "--as", "web-0", "--api-version", "2099-01-01"], "unknown api-version"),
    ],
    ids=["unknown-operation", "unknown-vm", "user-op-on-host", "short-notice", "cancel-unknown",
         "approve-unknown", "complete-unknown", "as-unknown-vm", "unknown-api-version"],
)  # fmt: skip
def test_user_mistakes_end_in_one_error_line(cli: Cli, args: list[str], fragment: str) -> None:
    cli(*args).assert_one_error_line(fragment)


def test_lifecycle_conflicts_end_in_one_error_line(cli: Cli, triggered: dict[str, str]) -> None:
    cli("complete", triggered["event"]).assert_one_error_line("only a Started event")
    assert cli("start", triggered["event"]).code == 0
    cli("cancel", triggered["event"]).assert_one_error_line("(HTTP 409)")


@pytest.mark.parametrize("command", [["events"], ["trigger", "user-reboot", "web-0"], ["topology"]])
def test_no_control_api_at_the_url_is_one_error_line(command: list[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = run_cli(command, url)
    line = result.assert_one_error_line(f"cannot reach the control API at {url}")
    assert "forewarn serve" in line


def test_a_url_that_is_not_the_control_api_is_one_error_line(server: ServerProcess) -> None:
    run_cli(["events"], server.imds_url).assert_one_error_line(
        f"{server.imds_url} is not a forewarn control API"
    )


def test_advancing_a_real_clock_is_one_error_line(
    start_server: Callable[..., ServerProcess],
) -> None:
    server = start_server(["--clock", "real"])
    run_cli(["advance", "60"], server.control_url).assert_one_error_line("virtual clock")


def test_token_protected_server_needs_the_token(
    start_server: Callable[..., ServerProcess],
) -> None:
    server = start_server([*VIRTUAL, "--control-token", "s3cret"])
    url = server.control_url
    run_cli(["events"], url).assert_one_error_line("Authorization: Bearer token (HTTP 401)")
    run_cli(["--token", "wrong", "events"], url).assert_one_error_line("(HTTP 401)")
    result = run_cli(["--token", "s3cret", "events", "--json"], url)
    assert (result.code, json.loads(result.stdout)) == (0, [])
