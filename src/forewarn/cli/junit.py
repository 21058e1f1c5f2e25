"""JUnit XML for CI: a rehearsal's verdicts, or a scenario's expectations, as test cases.

One ``<testcase>`` per thing that had to hold, so a pipeline shows which one failed and
why; the file is what Jenkins, GitLab and GitHub test reporters read (``testsuites`` >
``testsuite`` with ``name``/``tests``/``failures``/``errors``/``skipped``, and each case's
``classname``/``name``/``time``).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forewarn.cli.errors import fail

__all__ = ["Case", "report_cases", "write_junit"]

#: Operation and event verdicts that fail the build.
_FAILING = frozenset({"no-notice", "fail"})


@dataclass(frozen=True)
class Case:
    """One test case: ``outcome`` is passed, failed or skipped; ``message`` says why."""

    classname: str
    name: str
    outcome: str
    message: str
    detail: str = ""


def report_cases(data: dict[str, Any], per_event: bool = True) -> list[Case]:
    """A report's cases: one per operation (a rollout as one), one per event (or, not
    ``per_event`` and the server rolled up more events than it kept, one per scope
    they were in: a region rollout's thousands of events as one case a scope), then
    one per central controller (an Event Grid subscription) and event. A case a scope
    needs every scope's row: ``data`` whose ``event_scopes`` the server cut is refused
    (``scope_pages.every_scope_row`` reads the rest)."""
    cases = []
    for op in data.get("operations", []):
        name = f"{op['kind'] or 'operation'} {op['target'] or ''} ({op['id']})".replace("  ", " ")
        detail = "\n".join(f"{s['scope']}: {s['verdict']}: {s['summary']}" for s in op["scopes"])
        cases.append(Case("forewarn.operations", name, _outcome(op["verdict"]),
                          f"{op['verdict']}: {op['progress']}", detail))  # fmt: skip
    scopes = data.get("event_scopes")
    by_scope = not per_event and scopes is not None and "events" in data.get("trimmed", {})
    if by_scope and "event_scopes" in data.get("trimmed", {}):
        raise ValueError("event_scopes is cut: a case a scope needs every scope's row")
    for t in scopes if by_scope and scopes is not None else ():
        counted = ", ".join(f"{n} {v}" for v, n in sorted(t["totals"].items()))
        message = (
            f"{t['verdict']}: {t['events']} events ({counted}), {t['vms']} VMs; {t['summary']}"
        )
        cases.append(Case("forewarn.scopes", f"events of {t['scope']} ({t['kind']})",
                          _outcome(t["verdict"]), message))  # fmt: skip
    for e in data["events"] if not by_scope else ():
        name = f"{e['type']} of {e['scope']} ({e['id']})"
        cases.append(
            Case("forewarn.events", name, _outcome(e["verdict"]), f"{e['verdict']}: {e['summary']}")
        )
    for c in data.get("controllers", []):
        for r in c["events"]:
            name = f"{c['subscription']}: {r['type']} of {r['scope']} ({r['event_id']})"
            cases.append(Case("forewarn.controllers", name, _outcome(r["grade"]),
                              f"{r['verdict']}: {r['note']}"))  # fmt: skip
    return cases


def _outcome(verdict: str) -> str:
    if verdict in _FAILING:
        return "failed"
    return "skipped" if verdict == "pending" else "passed"


def write_junit(path: Path, suite: str, cases: list[Case], seconds: float = 0.0) -> None:
    """Write ``cases`` as one test suite to ``path`` (a clear error when it cannot)."""
    failures = sum(1 for c in cases if c.outcome == "failed")
    skipped = sum(1 for c in cases if c.outcome == "skipped")
    counts = {"tests": str(len(cases)), "failures": str(failures), "errors": "0",
              "skipped": str(skipped)}  # fmt: skip
    attributes = {"name": suite, "time": f"{seconds:.3f}", **counts}
    root = ET.Element("testsuites", attributes)
    node = ET.SubElement(root, "testsuite", attributes)
    for case in cases:
        element = ET.SubElement(node, "testcase", classname=case.classname, name=case.name,
                                time="0")  # fmt: skip
        if case.outcome == "failed":
            ET.SubElement(element, "failure", message=case.message, type=case.classname).text = (
                case.detail or case.message
            )
        elif case.outcome == "skipped":
            ET.SubElement(element, "skipped", message=case.message)
        else:
            ET.SubElement(element, "system-out").text = case.message + (
                f"\n{case.detail}" if case.detail else ""
            )
    ET.indent(root)
    try:
        ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}")
