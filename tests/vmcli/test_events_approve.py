"""``forewarn events --url`` and ``forewarn approve --url``: a person on a VM reading and
approving on the metadata endpoint, against a real ``forewarn serve``."""

from __future__ import annotations

import json

from tests.support.cli import run_cli
from tests.support.serverproc import ServerProcess, event_status, free_port, trigger
from tests.vmcli.conftest import WEB0, WEB1, WEB2

REBOOT_TEXT = "Virtual machine is going to be restarted as requested by authorized user."


def test_events_url_json_is_the_wire_document(server: ServerProcess) -> None:
    event_id = trigger(server, "user-reboot", "web-1")
    result = run_cli(["events", "--url", server.imds_url, "--source-address", WEB1, "--json"])
    assert result.code == 0, result.stderr
    document = json.loads(result.stdout)
    wire = server.imds(vm_address=WEB1).json()
    assert document == wire  # what the endpoint sent, key for key
    assert [e["EventId"] for e in document["Events"]] == [event_id]
    assert document["Events"][0]["Description"] == REBOOT_TEXT


def test_events_url_in_an_older_version(server: ServerProcess) -> None:
    trigger(server, "user-reboot", "web-1")
    result = run_cli(["events", "--url", server.imds_url, "--source-address", WEB1, "--json",
                 "--api-version", "2017-03-01"])  # fmt: skip
    assert result.code == 0, result.stderr
    (event,) = json.loads(result.stdout)["Events"]
    assert event["Resources"] == ["_web-1"]


def test_events_url_table(server: ServerProcess) -> None:
    event_id = trigger(server, "user-reboot", "web-0")
    result = run_cli(["events", "--url", server.imds_url])  # from 127.0.0.1: the default VM, web-0
    assert result.code == 0, result.stderr
    assert event_id in result.stdout
    assert "DocumentIncarnation 2" in result.stdout
    lines = result.stdout.splitlines()
    at = next(n for n, line in enumerate(lines) if event_id in line)
    for word in ("Scheduled", "Reboot", "User", "web-0"):
        assert word in lines[at], lines[at]
    assert lines[at + 1].strip().startswith("in 1"), lines[at + 1]  # the countdown, under it


def test_approve_url_starts_the_event(server: ServerProcess) -> None:
    event_id = trigger(server, "user-reboot", "web-1")
    other = trigger(server, "user-reboot", "jumpbox")
    # web-2 shares web-1's availability set, so it may approve web-1's event
    result = run_cli(["approve", event_id, "--url", server.imds_url, "--source-address", WEB2])
    assert result.code == 0, result.stderr
    assert f"approved on {server.imds_url}: {event_id}" in result.stdout
    assert event_status(server, event_id) == "Started"
    assert event_status(server, other) == "Scheduled"


def test_approve_url_of_an_event_this_vm_cannot_see(server: ServerProcess) -> None:
    mine = trigger(server, "user-reboot", "web-0")
    theirs = trigger(server, "user-reboot", "jumpbox")
    result = run_cli(["approve", mine, theirs, "--url", server.imds_url, "--source-address", WEB0])
    result.assert_one_error_line(f"not in the document of {server.imds_url}: {theirs} (nothing")
    assert (event_status(server, mine), event_status(server, theirs)) == ("Scheduled", "Scheduled")


def test_approve_without_url_still_uses_the_control_api(server: ServerProcess) -> None:
    first = trigger(server, "user-reboot", "web-0")
    second = trigger(server, "user-reboot", "jumpbox")
    result = run_cli(["approve", first, second], control=server.control_url)
    assert result.code == 0, result.stderr
    assert result.stdout.splitlines() == [f"{first}: Started", f"{second}: Started"]


def test_mistakes_are_one_line(server: ServerProcess) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    run_cli(["events", "--url", dead]).assert_one_error_line("cannot reach")
    run_cli(["approve", "X", "--url", dead]).assert_one_error_line("cannot reach")
    run_cli(["events", "--url", "ftp://somewhere"]).assert_one_error_line("http:// URL")
    run_cli(["events", "--url", server.imds_url, "--as", "web-1"]).assert_one_error_line(
        "--source-address"
    )
    run_cli(["events", "--source-address", WEB0]).assert_one_error_line("needs --url")
    run_cli(
        ["events", "--url", server.imds_url, "--api-version", "2015-01-01"]
    ).assert_one_error_line("HTTP 400")
    run_cli(["approve", "--url", server.imds_url]).assert_one_error_line("EVENT_ID")
    # the control API's URL is not a metadata endpoint: said plainly
    run_cli(["events", "--url", server.control_url]).assert_one_error_line("HTTP 4")
