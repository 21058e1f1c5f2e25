"""The VM commands' tables keep the 80-column rule of the control side: ids and countdowns
whole, Source and Duration giving way first, ``--wide`` showing everything."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime

from rich.console import Console

from forewarn.client import parse_document
from forewarn.contract import format_rfc1123
from forewarn.vmcommands import _View
from tests.support.cli import run_cli
from tests.support.serverproc import ServerProcess, trigger


def whole(word: str, lines: list[str]) -> bool:
    """``word`` unbroken (not cut, not wrapped) on one of ``lines``."""
    return any(re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", line) for line in lines)


def test_events_url_fits_80_columns_and_keeps_ids_and_countdowns(server: ServerProcess) -> None:
    ids = [trigger(server, "user-reboot", "web-0"), trigger(server, "user-reboot", "web-1")]
    result = run_cli(["events", "--url", server.imds_url], columns=80)
    assert (result.code, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, result.stdout
    assert all(whole(event_id, lines) for event_id in ids), result.stdout
    assert whole("Scheduled", lines) and "…" not in result.stdout
    countdowns = [line for line in lines if re.search(r"\bin \d+m\d\ds\b", line)]
    assert len(countdowns) == 2, result.stdout  # "in 14m59s", on one line each
    assert lines[-1].rstrip() == "hidden to fit: Source, Duration (--wide shows them)"

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
        out = Console(file=io.StringIO(), width=80, color_system=None)
        out.print(view.render())
        text = out.file.getvalue()  # type: ignore[attr-defined]
        return [line.rstrip() for line in str(text).splitlines()]

    lines = render(wide=False)
    assert max(len(line) for line in lines) <= 80, "\n".join(lines)
    assert all(whole(e["EventId"], lines) for e in events), "\n".join(lines)  # type: ignore[arg-type]
    assert sum(bool(re.search(r"\bin 3h0\dm\b", line)) for line in lines) == 2, "\n".join(lines)
    assert "hidden to fit: Source, Duration (--wide shows them)" in lines
    assert not any("hidden to fit" in line for line in render(wide=True))
