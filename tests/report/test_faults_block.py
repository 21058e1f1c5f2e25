"""The HTML report's faults block: shown only when faults were injected, one row per VM
that met one, saying whether it kept polling and which events it missed."""

from __future__ import annotations

import re

import click
import msgspec
import pytest
from click.testing import CliRunner

from forewarn.cli.report import _print as print_report
from forewarn.rehearsal.coping import FaultTally, MissedEvent, coping
from forewarn.rehearsal.facts import ReactionData
from forewarn.rehearsal.grading import grade
from forewarn.rehearsal.report import render_report

T0 = 1_700_000_000.0


def _rows(page: str) -> dict[str, str]:
    found = re.findall(r'<tr class="fault-vm" data-vm="([^"]+)"(.*?)</tr>', page, flags=re.S)
    return dict(found)


def test_no_fault_no_block() -> None:
    page = render_report(grade(ReactionData(), now=T0))
    assert "Endpoint faults" not in page and 'class="faults"' not in page


def test_each_faulted_vm_is_a_row_saying_how_it_coped() -> None:
    report = grade(ReactionData(), now=T0 + 600)
    tallies = {
        "web-0": FaultTally(T0, T0 + 60, {"status": 7}),  # 410s for a minute, polled on
        "web-1": FaultTally(T0 + 10, T0 + 10, {"timeout": 1}),  # hung once, never back
    }
    last = {"web-0": T0 + 300, "web-1": T0 + 10 - 1}
    missed = [MissedEvent("web-1", "0123456789abcdef", T0 + 5, T0 + 200)]
    report.faults = coping(tallies, last, missed)
    page = render_report(report)
    assert "<h2>Endpoint faults and how each VM coped</h2>" in page
    assert "2 VMs met an injected fault" in page
    rows = _rows(page)
    assert set(rows) == {"web-0", "web-1"}
    web0, web1 = rows["web-0"], rows["web-1"]
    assert 'data-kept-polling="yes"' in web0 and 'data-kept-polling="no"' in web1
    assert "7 (7 status)" in web0 and "1 (1 timeout)" in web1
    assert ">4 min<" in web0  # asked again 240 s after its last faulted request
    assert "never asked again" in web1 and "never asked again" not in web0
    assert 'href="#event-0123456789abcdef"' in web1 and "<code>01234567</code>" in web1
    assert "#event-" not in web0
    assert ">10 s<" in web0  # one faulted request every 10 s (60 s, 7 requests)


def test_the_terminal_faults_table_leads_with_each_vms_verdict_in_80_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No column of 36-character event ids: the first 80 columns hold the verdict."""
    event_id = "0123456789abcdef0123456789abcdef0123"
    report = grade(ReactionData(), now=T0 + 600)
    tallies = {
        "web-0": FaultTally(T0, T0 + 60, {"status": 7}),
        "web-1": FaultTally(T0 + 10, T0 + 10, {"timeout": 1}),
    }
    last = {"web-0": T0 + 300, "web-1": T0 + 9}
    report.faults = coping(tallies, last, [MissedEvent("web-1", event_id, T0 + 5, T0 + 200)])
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("NO_COLOR", "1")
    data = msgspec.to_builtins(report)
    out = CliRunner().invoke(click.command()(lambda: print_report(data, False, False))).output
    lines = out.splitlines()
    assert all(len(line.rstrip()) <= 80 for line in lines), out
    assert event_id not in out
    rows = {line.split()[0]: line for line in lines if line.startswith("web-")}
    assert "asked again after 240.0 s" in rows["web-0"]
    assert "never asked again, missed 1" in rows["web-1"]
    at = lines.index(rows["web-1"])
    assert "01234567" in " ".join(lines[at : at + 3])
