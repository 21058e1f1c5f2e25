"""A run's report as text (80 columns), JSON or JUnit XML, and the rules table itself.

Text: one line per rule (verdict, rule id, title), and under a FAIL what was expected and
what was seen, under a SKIP why; then the totals and, when something failed, how to hand
the finding back.
"""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

from forewarn.conformance.results import Report
from forewarn.conformance.rules import RULES

__all__ = ["WIDTH", "hand_back", "report_json", "report_lines", "rules_lines",
           "rules_markdown", "write_junit"]  # fmt: skip

WIDTH = 80
_ID = 19  # the longest rule id, and a space
_INDENT = " " * 7


def _wrapped(first: str, text: str, indent: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=first, subsequent_indent=indent,
                         break_long_words=True, break_on_hyphens=False) or [first]  # fmt: skip


def hand_back(recording: str | None) -> list[str]:
    """What to do with a FAIL: it is drift; how to send it home."""
    attach = (f"the recording {recording}" if recording
              else "a recording (run again with --record conformance.jsonl)")  # fmt: skip
    text = (
        "A FAIL is drift between this endpoint and forewarn's wire contract, at the rule "
        "its id names (R5: CONTRACT rule R5). Hand it back: open an issue on forewarn's "
        f"tracker with this output and {attach} attached; `forewarn replay FILE` serves "
        "the recorded documents again, so the drift can be reproduced without Azure."
    )
    return _wrapped("", text, "")


def report_lines(report: Report) -> list[str]:
    """The report as lines of at most 80 columns."""
    who = f" as VM {report.vm}" if report.vm else ""
    lines = _wrapped("", f"forewarn conformance: {report.endpoint}{who}", "  ")
    for result in report.ordered():
        r = result.rule
        lines += _wrapped(f"{result.verdict} {r.id:<{_ID}}", r.title, " " * (5 + _ID))
        if result.verdict == "FAIL":
            lines += _wrapped(f"{_INDENT}expected ", r.expects_text(), _INDENT + " " * 9)
            lines += _wrapped(f"{_INDENT}seen     ", result.detail, _INDENT + " " * 9)
        elif result.verdict == "SKIP":
            lines += _wrapped(f"{_INDENT}why: ", result.detail, _INDENT + " " * 5)
    if report.timeline:
        lines.append("")
        lines.append("timeline (seen on this VM's clock, UTC; beside it, the contract):")
    lines += report.timeline_lines
    lines.append("")
    lines.append(f"{report.count('PASS')} passed, {report.count('FAIL')} failed, "
                 f"{report.count('SKIP')} skipped")  # fmt: skip
    if report.recording:
        lines += _wrapped("", f"recording: {report.recording} (forewarn replay plays it)", "  ")
    if not report.ok:
        lines.append("")
        lines += hand_back(report.recording)
    return lines


def report_json(report: Report) -> str:
    return json.dumps(report.as_dict(), indent=2)


def write_junit(report: Report, path: str | Path) -> None:
    """One test case per rule; a FAIL is a failure, a SKIP skipped (OSError: the caller's)."""
    suite = ET.Element("testsuite", name="forewarn conformance", tests=str(len(report.results)),
                       failures=str(report.count("FAIL")), errors="0",
                       skipped=str(report.count("SKIP")))  # fmt: skip
    for result in report.ordered():
        r = result.rule
        case = ET.SubElement(suite, "testcase", classname=f"conformance.{r.section}",
                             name=f"{r.id}: {r.title}", time="0")  # fmt: skip
        if result.verdict == "FAIL":
            failure = ET.SubElement(case, "failure", message=result.detail)
            failure.text = f"expected: {r.expects_text()}\nseen: {result.detail}"
        elif result.verdict == "SKIP":
            ET.SubElement(case, "skipped", message=result.detail)
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    Path(path).write_bytes(ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n")


def rules_lines() -> list[str]:
    """Every rule: id, tag, title, what it sends and expects (``--rules``)."""
    lines = []
    for r in RULES:
        when = {"always": "", "follow": " (--follow)", "burst": " (--burst)"}[r.when]
        lines += _wrapped(f"{r.id:<{_ID}}", f"[{r.tag}] {r.title}{when}", " " * _ID)
        lines += _wrapped(" " * _ID + "sends   ", r.sends_text(), " " * (_ID + 8))
        lines += _wrapped(" " * _ID + "expects ", r.expects_text(), " " * (_ID + 8))
    return lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def rules_markdown() -> str:
    """The rules as a Markdown table (docs/conformance.md holds exactly this)."""
    rows = ["| Rule | Tag | Checks | Sends | Expects |", "|---|---|---|---|---|"]
    for r in RULES:
        when = {"always": "", "follow": " (`--follow`)", "burst": " (`--burst`)"}[r.when]
        rows.append(f"| {r.id} | {r.tag} | {_cell(r.title)}{when} | {_cell(r.sends_text())} "
                    f"| {_cell(r.expects_text())} |")  # fmt: skip
    return "\n".join(rows) + "\n"
