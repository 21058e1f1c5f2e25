"""The VM commands' tables keep the 80-column rule: ids, countdowns, "Reboot Scheduled"
and dates whole on their lines (a row that cannot stay whole on one line is printed as a
record, a field a line), ``--wide`` showing every column in a row."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from forewarn.client import parse_document
from forewarn.contract import format_rfc1123
from forewarn.vm.endpoint import _View
from tests.support.cli import run_cli
from tests.support.serverproc import ServerProcess, trigger


def whole(word: str, lines: list[str]) -> bool:
    """``word`` unbroken (not cut, not wrapped) on one of ``lines``."""
    return any(re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", line) for line in lines)


DATE = r"\b\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\b"


def test_events_url_through_a_pipe_keeps_each_field_whole_in_80_columns(
    server: ServerProcess,
) -> None:
    ids = [trigger(server, "user-reboot", "web-0"), trigger(server, "user-reboot", "web-1")]
    result = run_cli(["events", "--url", server.imds_url], columns=80)
    assert (result.code, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, result.stdout
    assert all(whole(event_id, lines) for event_id in ids), result.stdout
    assert "…" not in result.stdout
    # "Reboot Scheduled" and each date on one line, never "Reboot" above "Scheduled"
    assert sum("Reboot Scheduled" in line for line in lines) == 2, result.stdout
    assert sum(bool(re.search(DATE, line)) for line in lines) == 2, result.stdout
    countdowns = [line for line in lines if re.search(r"\bin \d+m\d\ds\b", line)]
    assert len(countdowns) == 2, result.stdout  # "in 14m59s", on one line each
    for field in ("Source", "Duration", "Resources"):  # nothing hidden: a field a line
        assert sum(line.startswith(field) for line in lines) == 2, result.stdout

    wide = run_cli(["events", "--url", server.imds_url, "--wide"], columns=80)
    assert wide.code == 0, wide.stderr
    row = next(line for line in wide.stdout.splitlines() if ids[0] in line)
    assert re.search(r"Reboot Scheduled +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +web-0 +User +-", row), row
    countdown = wide.stdout.splitlines()[wide.stdout.splitlines().index(row) + 1]
    assert re.search(r"^ {30,}in \d+m\d\ds *$", countdown), countdown  # under NotBefore
    assert len(row) > 80 and "hidden to fit" not in wide.stdout


def test_the_live_watch_table_fits_80_columns() -> None:
    not_before = format_rfc1123(datetime.now(UTC).timestamp() + 3 * 3600 + 120)
    events = [
        {"EventId": f"{n}2345678-ABCD-4EF0-8123-456789ABCDEF", "EventStatus": "Scheduled",
         "EventType": "Reboot", "ResourceType": "VirtualMachine",
         "Resources": ["aks-nodepool1-12345678-vmss_13", "aks-nodepool1-12345678-vmss_14"],
         "NotBefore": not_before, "Description": "", "EventSource": "Platform",
         "DurationInSeconds": 300}
        for n in (1, 2)
    ]  # fmt: skip
    document = parse_document(json.dumps({"DocumentIncarnation": 3, "Events": events}))

    def render(wide: bool) -> list[str]:
        view = _View("http://169.254.169.254", "aks-nodepool1-12345678-vmss_13", 80, wide)
        view.document = document
        return view.render().splitlines()

    lines = render(wide=False)
    assert max(len(line) for line in lines) <= 80, "\n".join(lines)
    assert all(whole(e["EventId"], lines) for e in events), "\n".join(lines)  # type: ignore[arg-type]
    assert sum(bool(re.search(r"\bin 3h0\dm\b", line)) for line in lines) == 2, "\n".join(lines)
    assert sum("Reboot Scheduled" in line for line in lines) == 2, "\n".join(lines)
    assert sum(bool(re.search(DATE, line)) for line in lines) == 2, "\n".join(lines)
    rows = [line for line in render(wide=True) if line.startswith(("1234", "2234"))]
    assert len(rows) == 2 and all(len(row) > 80 for row in rows), rows
