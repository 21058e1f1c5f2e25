"""What a run found: one result per rule (PASS, FAIL with what was seen, SKIP with why)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from forewarn.conformance.rules import RULES, Rule

__all__ = ["Report", "Result", "Verdict", "failed", "passed", "skipped"]

Verdict = Literal["PASS", "FAIL", "SKIP"]


@dataclass(frozen=True, slots=True)
class Result:
    """The verdict on one rule; ``detail`` is what was seen (FAIL), why not (SKIP) or a
    note (PASS)."""

    rule: Rule
    verdict: Verdict
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        r = self.rule
        return {"id": r.id, "section": r.section, "tag": r.tag, "title": r.title,
                "verdict": self.verdict, "sends": r.sends_text(),
                "expects": r.expects_text(), "detail": self.detail}  # fmt: skip


def passed(rule: Rule, note: str = "") -> Result:
    return Result(rule, "PASS", note)


def failed(rule: Rule, seen: str) -> Result:
    return Result(rule, "FAIL", seen)


def skipped(rule: Rule, why: str) -> Result:
    return Result(rule, "SKIP", why)


@dataclass
class Report:
    """A whole run: the endpoint, who asked, every rule's result in table order."""

    endpoint: str
    vm: str | None
    results: list[Result] = field(default_factory=list)
    #: With --follow: each event's timeline, beside what the contract expects.
    timeline: list[dict[str, Any]] = field(default_factory=list)
    timeline_lines: list[str] = field(default_factory=list)
    recording: str | None = None

    def ordered(self) -> list[Result]:
        """Results in the order of the rules table."""
        order = {r.id: i for i, r in enumerate(RULES)}
        return sorted(self.results, key=lambda res: order[res.rule.id])

    def count(self, verdict: Verdict) -> int:
        return sum(1 for r in self.results if r.verdict == verdict)

    @property
    def ok(self) -> bool:
        return self.count("FAIL") == 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "vm": self.vm,
            "passed": self.count("PASS"),
            "failed": self.count("FAIL"),
            "skipped": self.count("SKIP"),
            "results": [r.as_dict() for r in self.ordered()],
            "timeline": self.timeline,
            "recording": self.recording,
        }
