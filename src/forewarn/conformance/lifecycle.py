"""The lifecycle rules (CONTRACT section 4) over what ``--follow`` saw of each event.

Pure: ``Sighting``s in, results and a timeline out. Times are the VM's wall clock (POSIX
seconds); the contract's durations are divided by ``time_scale`` (an endpoint run as
``forewarn serve --time-scale N``) and judged with ``slack`` seconds to spare (polling
and the whole seconds of NotBefore).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from forewarn.conformance.results import Result, failed, passed, skipped
from forewarn.conformance.rules import rule

__all__ = ["MIN_NOTICE", "Approval", "Sighting", "hms", "judge_lifecycle", "timeline"]

#: L1: the least notice of each event type, in seconds (Terminate: the least configurable).
MIN_NOTICE = {"Freeze": 900.0, "Reboot": 900.0, "Redeploy": 600.0, "Preempt": 30.0,
              "Terminate": 300.0}  # fmt: skip
#: L5: how long events typically stay Started before removal (the medians the contract
#: quotes); Preempt and Terminate end with the VM deleted.
TYPICAL_STAY = {"Freeze": 300.0, "Reboot": 600.0, "Redeploy": 600.0}


@dataclass
class Sighting:
    """What the follower saw of one EventId."""

    event_id: str
    event_type: str
    source: str
    resources: list[str]
    duration: int | None
    first_seen: float
    first_status: str
    #: Already in the first document polled: its creation was not seen.
    at_start: bool
    not_before: datetime | None = None
    started_at: float | None = None
    removed_at: float | None = None
    approved_at: float | None = None
    #: Status changes that went backwards (Started, then Scheduled again).
    backwards: list[str] = field(default_factory=list)
    #: The status last seen (``first_status`` until it changes).
    status: str = ""

    def __post_init__(self) -> None:
        self.status = self.status or self.first_status


@dataclass
class Approval:
    """One POST of ``--approve``: the ids it named, what came back."""

    at: float
    ids: list[str]
    status: int | None
    body: bytes
    #: Ids that started only once approved again alone (P1).
    alone_started: list[str] = field(default_factory=list)
    #: Ids approved again alone that still waited (another tenant, L4).
    alone_waited: list[str] = field(default_factory=list)


def hms(t: float | None) -> str:
    """``t`` (POSIX seconds) as UTC ``HH:MM:SS`` on the VM's clock, or ``-``."""
    return "-" if t is None else datetime.fromtimestamp(t, UTC).strftime("%H:%M:%S")


def _iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


def _notice(s: Sighting) -> float | None:
    if s.not_before is None:
        return None
    return s.not_before.timestamp() - s.first_seen


def judge_lifecycle(
    sightings: list[Sighting],
    approvals: list[Approval],
    steps: list[str],
    replaced: list[str],
    *,
    followed: bool,
    approve: bool,
    time_scale: float,
    slack: float,
) -> list[Result]:
    """The results of the follow rules."""
    ids = ("L1.notice", "D3.same-id", "L3.forward", "L5.removed", "D1.steps", "P3.approved",
           "P1.several-ids")  # fmt: skip
    if not followed:
        return [skipped(rule(i), "a lifecycle rule: run with --follow") for i in ids]
    if not sightings:
        return [skipped(rule(i), "no event came within --timeout") for i in ids]
    return [
        _l1(sightings, time_scale, slack),
        failed(rule("D3.same-id"), "; ".join(replaced[:2])) if replaced
        else passed(rule("D3.same-id"), f"{len(sightings)} events"),
        _l3(sightings),
        _l5(sightings, time_scale, slack),
        failed(rule("D1.steps"), "; ".join(steps[:2])) if steps else passed(rule("D1.steps")),
        _p3(approvals, approve),
        _p1(approvals, approve),
    ]  # fmt: skip


def _l1(sightings: list[Sighting], time_scale: float, slack: float) -> Result:
    r = rule("L1.notice")
    checked, problems = [], []
    for s in sightings:
        least = MIN_NOTICE.get(s.event_type)
        notice = _notice(s)
        if s.at_start or s.first_status != "Scheduled" or least is None or notice is None:
            continue
        checked.append(s)
        if notice < least / time_scale - slack:
            problems.append(f"{s.event_type} {s.event_id}: {notice:.1f} s notice, "
                            f"less than {least / time_scale:g} s")  # fmt: skip
    if problems:
        return failed(r, "; ".join(problems[:2]))
    if not checked:
        return skipped(r, "no event was seen created Scheduled (created Started, or there "
                       "before the kit)")  # fmt: skip
    return passed(r, ", ".join(f"{s.event_type} {_notice(s):.1f} s" for s in checked[:3]))


def _l3(sightings: list[Sighting]) -> Result:
    problems = [f"{s.event_id}: {b}" for s in sightings for b in s.backwards]
    if problems:
        return failed(rule("L3.forward"), "; ".join(problems[:2]))
    return passed(rule("L3.forward"))


def _l5(sightings: list[Sighting], time_scale: float, slack: float) -> Result:
    r = rule("L5.removed")
    started = [s for s in sightings if s.started_at is not None]
    if not started:
        return skipped(r, "no event was seen Started")
    problems, waiting = [], []
    for s in started:
        assert s.started_at is not None
        if s.removed_at is None:
            waiting.append(s.event_id)
            continue
        stayed = s.removed_at - s.started_at
        impact = (s.duration or 0) / time_scale
        if s.duration is not None and s.duration > 0 and stayed < impact - slack:
            problems.append(f"{s.event_id} removed {stayed:.1f} s after Started, before its "
                            f"{impact:g} s impact")  # fmt: skip
    if problems:
        return failed(r, "; ".join(problems[:2]))
    if waiting:
        return skipped(r, f"still Started when following ended: {', '.join(waiting)}")
    return passed(r)


def _p3(approvals: list[Approval], approve: bool) -> Result:
    r = rule("P3.approved")
    if not approve:
        return skipped(r, "approves nothing without --approve")
    if not approvals:
        return skipped(r, "no Scheduled event listed this VM")
    bad = [a for a in approvals if a.status != 200 or a.body.strip()]
    if bad:
        body = bad[0].body.decode("utf-8", "replace")[:120]
        return failed(r, f"{bad[0].status} {body}".rstrip())
    return passed(r, f"{len(approvals)} approvals")


def _p1(approvals: list[Approval], approve: bool) -> Result:
    r = rule("P1.several-ids")
    if not approve:
        return skipped(r, "approves nothing without --approve")
    together = [a for a in approvals if len(a.ids) > 1]
    if not together:
        return skipped(r, "never two Scheduled events listing this VM at once")
    lost = [i for a in together for i in a.alone_started]
    if lost:
        return failed(r, f"{', '.join(lost)} started only once approved again alone")
    waited = [i for a in together for i in a.alone_waited]
    note = f"{', '.join(waited)} waited for another tenant (L4)" if waited else ""
    return passed(r, note)


def timeline(
    sightings: list[Sighting], time_scale: float
) -> tuple[list[dict[str, Any]], list[str]]:
    """Each event as seen beside what the contract expects: JSON, and lines of 80 columns."""
    data, lines = [], []
    for s in sightings:
        least = MIN_NOTICE.get(s.event_type)
        stay = TYPICAL_STAY.get(s.event_type)
        notice = _notice(s)
        expect_notice = f">= {least / time_scale:g} s" if least is not None else "-"
        expect_removed = (f"after the impact, ~{stay / time_scale:g} s" if stay
                          else "VM deleted" if s.event_type in ("Preempt", "Terminate")
                          else "after the impact")  # fmt: skip
        data.append({
            "event_id": s.event_id, "type": s.event_type, "source": s.source,
            "resources": s.resources, "seen": _iso(s.first_seen), "seen_as": s.first_status,
            "there_at_start": s.at_start,
            "not_before": s.not_before.isoformat() if s.not_before else None,
            "notice_s": None if notice is None else round(notice, 1),
            "approved": _iso(s.approved_at), "started": _iso(s.started_at),
            "removed": _iso(s.removed_at),
            "expected": {"notice": f"L1: {expect_notice}",
                         "started": "L3: at NotBefore, or once every party approved",
                         "removed": f"L5: {expect_removed}"},
        })  # fmt: skip
        lines.append(f"event {s.event_id}: {s.event_type} ({s.source}) "
                     f"{', '.join(s.resources)}"[:80])  # fmt: skip
        seen = f"seen {s.first_status}" + (" (there at start)" if s.at_start else "")
        if notice is not None:
            seen += f", notice {notice:.1f} s"
        judged = s.first_status == "Scheduled" and not s.at_start
        rows: list[tuple[float | None, str, str]] = [
            (s.first_seen, seen, f"L1 {expect_notice}" if judged else "L1 not judged")
        ]
        if s.approved_at is not None:
            rows.append((s.approved_at, "approved (--approve)", "P3 200, empty body"))
        if s.started_at is not None and s.first_status != "Started":
            rows.append((s.started_at, "Started", "L3 NotBefore or approval"))
        if s.removed_at is not None:
            stayed = ("" if s.started_at is None
                      else f", Started for {s.removed_at - s.started_at:.1f} s")  # fmt: skip
            rows.append((s.removed_at, "removed" + stayed, f"L5 {expect_removed}"))
        else:
            rows.append((None, "not removed when following ended", f"L5 {expect_removed}"))
        for t, what, expected in rows:
            lines.append(f"  {hms(t):8} {what[:40]:40} {expected[:27]}".rstrip())
    return data, lines
