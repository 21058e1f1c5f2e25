"""Whether a scenario's expectations held, from what the run observed.

Operation checks read the operations (a rollout: every batch) and their history; VM
checks read the documents the run observed (``Timeline``): what a VM *saw*, not what the
platform meant, so a VM whose scope never got notice fails ``saw``/``vms_saw``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from forewarn.contract.durations import format_duration
from forewarn.scenarios.fleetview import FleetView
from forewarn.scenarios.model import Expectation
from forewarn.scenarios.timeline import Timeline

__all__ = ["Check", "OperationFacts", "evaluate"]

#: Platform seconds a notice may fall short by: a scaled clock's floating point, not a
#: shorter notice.
NOTICE_SLACK = 0.01
#: Start reasons that mean "no notice to wait out": created Started, or nobody notified.
AT_ONCE = frozenset({"auto_approved", "no_notice", "immediate"})


@dataclass(frozen=True, slots=True)
class Check:
    """One thing that had to hold, whether it did, and what was found."""

    what: str
    ok: bool
    detail: str


@dataclass(frozen=True, slots=True)
class OperationFacts:
    """A named operation at the end of a run (a rollout: all of its batches)."""

    name: str
    ops: list[dict[str, Any]]
    reasons: list[str | None]
    event_scopes: list[str]
    fleet: FleetView

    @property
    def event_ids(self) -> frozenset[str]:
        return frozenset(e.upper() for op in self.ops for e in op["event_ids"])

    @property
    def vms(self) -> list[str]:
        return list(dict.fromkeys(vm for op in self.ops for vm in op["vms"]))

    @property
    def unnotified(self) -> list[str]:
        return sorted({vm for op in self.ops for vm in op["unnotified"]})


def _reason(reason: str | None) -> str:
    return "at_once" if reason in AT_ONCE else str(reason)


def _operation_checks(
    facts: OperationFacts, e: Expectation, timeline: Timeline, scale: float
) -> list[Check]:
    spec, name = e.spec, facts.name
    out: list[Check] = []
    if spec.state is not None:
        states = sorted({op["state"] for op in facts.ops})
        out.append(Check(f"{name} is {spec.state}", states == [spec.state], ", ".join(states)))
    if spec.started is not None:
        allowed = [spec.started] if isinstance(spec.started, str) else spec.started
        reasons = [_reason(r) for r in facts.reasons]
        out.append(
            Check(
                f"{name} started {' or '.join(allowed)}",
                bool(reasons) and all(r in allowed for r in reasons),
                ", ".join(reasons) or "it never started",
            )
        )
    if spec.events is not None:
        count = len(facts.event_ids)
        out.append(Check(f"{name} raised {spec.events} events", count == spec.events, str(count)))
    if spec.one_event_per_scope:
        notified = set(facts.vms) - set(facts.unnotified)
        scopes = {facts.fleet.vms[vm].scope for vm in notified}
        held = (
            len(facts.event_scopes) == len(set(facts.event_scopes))
            and set(facts.event_scopes) == scopes
        )
        detail = f"events in {', '.join(facts.event_scopes) or 'no scope'}; VMs in {len(scopes)}"
        out.append(Check(f"{name} raised one event per scope", held, detail))
    if spec.sequential:
        ops = sorted(facts.ops, key=lambda op: op["created_at"])
        overlaps = [
            later["id"]
            for earlier, later in itertools.pairwise(ops)
            if earlier["ended_at"] is None or later["created_at"] < earlier["ended_at"]
        ]
        detail = f"{len(ops)} batches" + (
            f"; overlapping: {', '.join(overlaps)}" if overlaps else ""
        )
        out.append(Check(f"{name} walked one batch at a time", not overlaps, detail))
    if e.notice_at_least is not None:
        notices = [(op["not_before"] - op["created_at"]) * scale for op in facts.ops]
        shortest = min(notices, default=0.0)
        out.append(
            Check(
                f"{name} gave at least {format_duration(e.notice_at_least)} notice",
                bool(notices) and shortest >= e.notice_at_least - NOTICE_SLACK,
                f"{format_duration(shortest)}",
            )
        )
    if spec.unnotified is not None:
        wanted = sorted(spec.unnotified)
        out.append(
            Check(
                f"{name} left {', '.join(wanted) or 'no VM'} without notice",
                facts.unnotified == wanted,
                ", ".join(facts.unnotified) or "every VM was notified",
            )
        )
    if spec.vms_saw is not None:
        wrong = []
        for vm in facts.vms:
            saw = timeline.states(vm, facts.event_ids)
            if saw != spec.vms_saw:
                wrong.append(f"{vm} saw {', '.join(saw) or 'nothing'}")
        out.append(
            Check(
                f"each VM of {name} saw {', '.join(spec.vms_saw) or 'nothing'}",
                not wrong,
                "; ".join(wrong) or f"{len(facts.vms)} VMs",
            )
        )
    return out


def _vm_checks(
    vm: str, e: Expectation, timeline: Timeline, statuses: dict[str, str]
) -> list[Check]:
    spec, out = e.spec, []
    if vm not in statuses:
        return [Check(f"{vm} is a VM of the fleet", False, "no such VM")]
    if spec.saw is not None:
        saw = timeline.states(vm)
        out.append(
            Check(
                f"{vm} saw {', '.join(spec.saw) or 'nothing'}",
                saw == spec.saw,
                ", ".join(saw) or "nothing",
            )
        )
    if spec.status is not None:
        status = statuses[vm]
        out.append(Check(f"{vm} is {spec.status}", status == spec.status, status))
    return out


def evaluate(
    expectations: Sequence[Expectation],
    facts: dict[str, OperationFacts],
    timeline: Timeline,
    statuses: dict[str, str],
    scale: float,
    vm_name: Callable[[str], str] = str,
) -> list[Check]:
    """Every check of every expectation, in order (``vm_name`` resolves ``$target``)."""
    out: list[Check] = []
    for e in expectations:
        if e.spec.operation is not None:
            found = facts.get(e.spec.operation)
            if found is None:
                out.append(Check(f"{e.spec.operation} exists", False, "it was never created"))
                continue
            out.extend(_operation_checks(found, e, timeline, scale))
        elif e.spec.vm is not None:
            out.extend(_vm_checks(vm_name(e.spec.vm), e, timeline, statuses))
    return out
