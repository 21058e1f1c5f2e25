"""Tables at 80 columns: every line fits, and the fields a user reads or copies are there."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from forewarn.cli.output import Column, table
from tests.support.cli import Result, read_terminal, run_cli
from tests.support.serverproc import VIRTUAL, ServerProcess


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server with events of every status and width: started, approved, multi-VM."""
    server = ServerProcess(tmp_path_factory.mktemp("narrow") / "f.db", VIRTUAL).start()
    try:
        for kind, target in [
            ("hardware-failure", "web-0"),
            ("host-update", "host-2"),
            ("degraded-hardware", "jumpbox"),
            ("live-migration", "FrontEnd_IN_0"),
        ]:
            assert run_cli(["trigger", kind, target], server.control_url).code == 0
        first_freeze = server.control("GET", "/api/v1/events").json()[1]["id"]
        assert run_cli(["approve", first_freeze], server.control_url).code == 0
        yield server
    finally:
        server.stop()


def get(server: ServerProcess, path: str) -> Any:
    return server.control("GET", path).json()


def narrow(server: ServerProcess, *args: str, columns: int = 80) -> list[str]:
    """The lines of ``forewarn ARGS`` at ``columns``, each checked to fit."""
    result: Result = run_cli(args, server.control_url, columns)
    assert (result.code, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    too_long = [line for line in lines if len(line) > columns]
    assert not too_long, "\n".join(too_long)
    return lines


def whole(word: str, lines: list[str]) -> bool:
    """``word`` appears unbroken (not cut, not wrapped) on one of ``lines``."""
    return any(re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", line) for line in lines)


def test_events_keep_ids_whole_and_show_every_resource(busy: ServerProcess) -> None:
    lines = narrow(busy, "events")
    listing = get(busy, "/api/v1/events")
    assert len(listing) == 6
    for event in listing:
        (row,) = [line for line in lines if line.startswith(event["id"])]  # copyable
        assert event["type"] in row
        assert all(whole(vm, lines) for vm in event["resources"])
    text = "\n".join(lines)
    assert text.count("Scheduled") == 5 and text.count("Started") == 1
    assert "hidden to fit: Scope, Approved (--wide shows them)" in text


def test_the_document_a_vm_sees_fits(busy: ServerProcess) -> None:
    lines = narrow(busy, "events", "--as", "web-1")
    document = get(busy, "/api/v1/documents/web-1")
    for event in document["Events"]:
        assert any(line.startswith(event["EventId"]) for line in lines)
        assert all(whole(vm, lines) for vm in event["Resources"])
        if event["NotBefore"]:
            assert whole(event["NotBefore"].split()[-2], lines)  # the time of day


def test_topology_keeps_vm_names_and_addresses_on_one_line(busy: ServerProcess) -> None:
    lines = narrow(busy, "topology")
    for scope in get(busy, "/api/v1/topology")["scopes"]:
        for vm in scope["vms"]:
            pattern = rf"^{re.escape(vm['name'])} .*\b{vm['host']}\b.*{re.escape(vm['address'])} "
            assert any(re.search(pattern, line) for line in lines), vm["name"]


def test_history_shows_every_sequence_number_and_operation_id(busy: ServerProcess) -> None:
    lines = narrow(busy, "history")
    entries = get(busy, "/api/v1/history?limit=1000")
    assert len(entries) < 50  # all of them are on screen
    for entry in entries:
        (row,) = [line for line in lines if re.match(rf"{entry['seq']}\s", line)]
        assert entry["kind"] in row
        if entry["kind"].startswith("operation."):
            assert whole(entry["operation_id"], [row])
        if entry["event_id"]:
            assert entry["event_id"][:14] in row  # cut, but recognisable


@pytest.mark.parametrize("command", [["events"], ["topology"], ["history"]])
def test_a_wide_terminal_shows_every_column(busy: ServerProcess, command: list[str]) -> None:
    lines = narrow(busy, *command, columns=200)
    assert not any("hidden to fit" in line for line in lines)
    header = next(line for line in lines if line.split()[:1] in (["Id"], ["VM"], ["#"]))
    assert "Scope" in header.split()


def test_wide_prints_every_column_whatever_the_terminal(busy: ServerProcess) -> None:
    result = run_cli(["history", "--wide"], busy.control_url, columns=80)
    assert result.code == 0
    assert "Scope" in result.stdout and "hidden" not in result.stdout
    for event in get(busy, "/api/v1/events"):
        assert event["id"] in result.stdout  # not cut


def test_long_names_still_fit(capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    """Names longer than any column can give: folded inside the table, never past its edge."""
    monkeypatch.setenv("COLUMNS", "80")
    event_id = "0" * 8 + "-1111-2222-3333-" + "4" * 12
    resources = ", ".join(f"a-very-long-scale-set-name_{i}" for i in range(6))
    table(
        "Live events",
        [Column("Id", "key"), Column("Event", "phrase"), Column("Resources", "list")],
        [[event_id, "Terminate Scheduled", resources]],
    )
    lines = capsys.readouterr().out.splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[3].startswith(event_id)
    assert sum(line.count("a-very-long-scale-set-name_") for line in lines) == 6


def test_an_empty_listing_prints_its_headers(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "e.db", VIRTUAL).start()
    try:
        lines = narrow(server, "events")
    finally:
        server.stop()
    assert lines[1].split() == [
        "Id",
        "Event",
        "NotBefore",
        "(UTC)",
        "Resources",
        "Scope",
        "Approved",
    ]


def on_a_terminal(server: ServerProcess, *args: str, **env: str) -> str:
    """``forewarn ARGS`` with stdout on a terminal: what the user's screen receives."""
    master, slave = pty.openpty()
    clean = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "forewarn", "--control", server.control_url, *args],
        stdout=slave, stderr=subprocess.PIPE, env={**clean, "COLUMNS": "80", **env},
    )  # fmt: skip
    os.close(slave)
    screen = read_terminal(master)
    assert proc.wait(timeout=60) == 0
    return screen


@pytest.mark.parametrize("no_color", [None, "1"], ids=["colour", "NO_COLOR"])
def test_tables_are_styled_only_on_a_terminal_without_no_color(
    busy: ServerProcess, no_color: str | None
) -> None:
    screen = on_a_terminal(busy, "events", **({"NO_COLOR": no_color} if no_color else {}))
    assert "Live events" in screen
    assert ("\x1b[" in screen) == (no_color is None)
    piped = run_cli(["events"], busy.control_url).stdout
    assert "Live events" in piped and "\x1b" not in piped
