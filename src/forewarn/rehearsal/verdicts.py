"""Grading one event: turn recorded reactions into a verdict per event and per VM.

Pure (``grading.grade`` runs it over every event): it reads the facts the reaction
tracker recorded and the time, and says for each event whether every VM it listed saw it
before it started, how long each took to see it and to approve it, whether the approval
came before NotBefore, who missed it and why, and which VMs approved events that did not
list them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import msgspec

from forewarn.contract import EventType, lookup_version
from forewarn.rehearsal.coping import FaultTally, kinds_text
from forewarn.rehearsal.facts import EventFacts, VmPolls, VmReaction
from forewarn.rehearsal.sliced_sort import sort_sliced

__all__ = [
    "CREATED_STARTED",
    "DEFAULT_STALE_AFTER",
    "EventVerdict",
    "LatencyStats",
    "PollVerdict",
    "UnlistedApproval",
    "VmVerdict",
    "event_verdict",
    "seconds",
    "stats",
]

#: A VM that has not polled for this long (seconds of the platform clock) stopped polling.
DEFAULT_STALE_AFTER = 30.0

#: Start reasons that mean the event was created Started: no notice could be seen.
CREATED_STARTED = frozenset({"immediate", "auto_approved", "no_notice"})


class VmVerdict(msgspec.Struct, kw_only=True):
    """How one VM reacted to one event.

    ``verdict``: approved | detected | missed | waiting | unseen | created-started |
    unlisted.
    """

    vm: str
    listed: bool
    verdict: str
    note: str
    first_seen: float | None
    detected_after: float | None
    seen_started: float | None
    approved_at: float | None
    approved_after: float | None
    approved_in_time: bool | None
    last_poll_before_start: float | None
    last_poll: float | None


class EventVerdict(msgspec.Struct, kw_only=True):
    """One event, what happened to it, and the grade of the fleet's reaction.

    ``verdict``: ok | warn | fail | pending | info; ``status``: scheduled | started |
    completed | canceled."""

    id: str
    operation_id: str | None
    kind: str | None
    scope: str | None
    type: str | None
    source: str | None
    resources: list[str]
    created_at: float | None
    not_before: float | None
    notice: float | None
    started_at: float | None
    start_reason: str | None
    ended_at: float | None
    approved_by: str | None
    approved_at: float | None
    #: Where the approval came from: endpoint, arm, control or policy.
    approved_via: str | None = None
    status: str
    verdict: str
    summary: str
    seen: int
    missed: list[str]
    unlisted_approvals: list[str]
    vms: list[VmVerdict]
    #: The whole length of each list cut in a rolled-up verdict (``bounded.py``).
    trimmed: dict[str, int] = {}


class PollVerdict(msgspec.Struct, kw_only=True):
    """A VM that stopped polling: when it polled last and for how long it has been silent."""

    vm: str
    first_poll: float | None
    last_poll: float | None
    silent_for: float
    api_version: str | None


class UnlistedApproval(msgspec.Struct, kw_only=True):
    """A VM approved an event that did not list it (allowed in its scope, rarely meant)."""

    event_id: str
    vm: str
    at: float | None


class LatencyStats(msgspec.Struct, kw_only=True):
    """A latency distribution (seconds of the platform clock from the event's creation)."""

    count: int
    median: float | None
    p90: float | None
    max: float | None
    values: list[float]


def stats(values: Iterable[float]) -> LatencyStats:
    ordered = sort_sliced(values, key=float)
    if not ordered:
        return LatencyStats(count=0, median=None, p90=None, max=None, values=[])

    def rank(q: float) -> float:
        return ordered[max(0, math.ceil(q * len(ordered)) - 1)]

    return LatencyStats(
        count=len(ordered), median=rank(0.5), p90=rank(0.9), max=ordered[-1], values=ordered
    )


def seconds(value: float) -> str:
    """A duration as people read it: 0.4 s, 42 s, 14 min 54 s, 2 h 5 min, 3 d 4 h."""
    if value < 10:
        return f"{value:.1f} s"
    whole = round(value)
    if whole < 120:
        return f"{whole} s"
    for unit, size, sub, sub_size in (("min", 60, "s", 1), ("h", 3600, "min", 60)):
        if whole < size * (60 if unit == "min" else 48):
            main, rest = divmod(whole, size)
            rest //= sub_size
            return f"{main} {unit}" + (f" {rest} {sub}" if rest else "")
    days, rest = divmod(whole, 86400)
    return f"{days} d" + (f" {rest // 3600} h" if rest // 3600 else "")


def _status(facts: EventFacts) -> str:
    if facts.ended is not None:
        return facts.ended
    return "started" if facts.started_at is not None else "scheduled"


def _created_started(facts: EventFacts) -> bool:
    if facts.start_reason in CREATED_STARTED:
        return True
    return (
        facts.started_at is not None
        and facts.created_at is not None
        and facts.started_at <= facts.created_at
        and facts.start_reason is None
    )


def _shows(api_version: str | None, event_type: str | None) -> bool:
    """Whether documents of ``api_version`` show events of ``event_type``."""
    version = lookup_version(api_version) if api_version else None
    if version is None or event_type is None:
        return True
    try:
        return EventType(event_type) in version.event_types
    except ValueError:
        return True


def _faulted_during(facts: EventFacts, reaction: VmReaction, tally: FaultTally | None) -> str:
    """Why, when injected faults answered the VM's requests while the event was
    Scheduled (and no request of its got through since it was created); else ""."""
    if tally is None:
        return ""
    created, before = facts.created_at, reaction.last_poll_before_start
    if before is not None and created is not None and before > created:
        return ""  # a request of its got through during the notice
    answered = tally.answered(created, facts.started_at)
    if not answered:
        return ""
    count = sum(answered.values())
    return (
        f"it asked during the notice, but injected endpoint faults answered "
        f"{'its request' if count == 1 else f'all {count} of its requests'} "
        f"({kinds_text(answered)})"
    )


def _missed_because(
    facts: EventFacts, reaction: VmReaction, polls: VmPolls | None, tally: FaultTally | None
) -> str:
    """Why a VM never saw an event before it started, as far as its polls (and the
    injected faults that answered them) tell."""
    if polls is not None and not _shows(polls.api_version, facts.event_type):
        return f"polls with api-version {polls.api_version}, which does not show {facts.event_type}"
    faulted = _faulted_during(facts, reaction, tally)
    if faulted:
        return faulted
    if polls is None or polls.last_poll is None:
        return "never polled"
    before = reaction.last_poll_before_start
    created = facts.created_at
    if before is None:
        started = facts.started_at
        if polls.first_poll is not None and started is not None and polls.first_poll >= started:
            return "began polling only after the event started"
        return "did not poll while the event was Scheduled"
    # A poll at the very instant of the creation (a virtual clock's) came before it:
    # the VM was not shown the event.
    if created is not None and before <= created:
        return f"did not poll during the notice (last poll {seconds(created - before)} before it)"
    return "polled during the notice but was not shown the event"


def _vm_verdict(
    facts: EventFacts,
    vm: str,
    reaction: VmReaction,
    polls: VmPolls | None,
    status: str,
    listed: bool,
    tally: FaultTally | None = None,
) -> VmVerdict:
    created, not_before = facts.created_at, facts.not_before
    detected_after = (
        reaction.first_seen - created
        if reaction.first_seen is not None and created is not None
        else None
    )
    approved_after = (
        reaction.approved_at - created
        if reaction.approved_at is not None and created is not None
        else None
    )
    in_time = None
    if reaction.approved_at is not None and not_before is not None:
        at, began = reaction.approved_at, facts.started_at
        # At the very instant it started (a virtual clock's), an approval counted only
        # if the event was started by one: one the platform started on its own (at
        # NotBefore, nobody's approval on it) came after.
        in_time = at <= not_before and (
            began is None or at < began or (at == began and facts.approved_by is not None)
        )
    if not listed:
        verdict = "unlisted"
        note = "approved an event that does not list it"
    elif _created_started(facts):
        verdict = "created-started"
        note = "created Started: there was nothing to see in advance"
        if reaction.seen_started is not None and facts.started_at is not None:
            note += f"; saw it {seconds(max(0.0, reaction.seen_started - facts.started_at))} in"
    elif reaction.first_seen is not None:
        # An approval that came after the event started (the endpoint still answers 200,
        # as Azure does) approved nothing: the VM saw it and did not approve in time.
        verdict = "approved" if reaction.approved_at is not None and in_time is not False else (
            "detected"
        )  # fmt: skip
        note = f"saw it after {seconds(max(0.0, detected_after or 0.0))}"
        if reaction.approved_at is not None and in_time:
            assert not_before is not None
            note += f", approved {seconds(not_before - reaction.approved_at)} before NotBefore"
        elif reaction.approved_at is not None and in_time is False:
            began = facts.started_at if facts.started_at is not None else not_before
            late = "" if began is None else f" {seconds(max(0.0, reaction.approved_at - began))}"
            note += f", approved too late:{late} after it started (not counted as approved)"
    elif status == "scheduled":
        verdict, note = "waiting", "has not seen it yet"
    elif status == "canceled" and facts.started_at is None:
        verdict, note = "unseen", "canceled before it saw it"
    else:
        verdict = "missed"
        note = "never saw it before it started: " + _missed_because(facts, reaction, polls, tally)
    return VmVerdict(
        vm=vm,
        listed=listed,
        verdict=verdict,
        note=note,
        first_seen=reaction.first_seen,
        detected_after=detected_after,
        seen_started=reaction.seen_started,
        approved_at=reaction.approved_at,
        approved_after=approved_after,
        approved_in_time=in_time,
        last_poll_before_start=reaction.last_poll_before_start,
        last_poll=polls.last_poll if polls is not None else None,
    )


def event_verdict(
    facts: EventFacts,
    reactions: dict[str, VmReaction],
    polls: dict[str, VmPolls],
    faults: Mapping[str, FaultTally] | None = None,
) -> EventVerdict:
    """The verdict on one event from its facts, its VMs' reactions, every VM's polls and
    the requests of each VM injected faults answered (a reason to miss it)."""
    status = _status(facts)
    resources = list(facts.resources or ())
    listed = set(resources)
    faults = faults or {}
    vms = [
        _vm_verdict(
            facts, vm, reactions.get(vm) or VmReaction(event_id=facts.id, vm=vm),
            polls.get(vm), status, True, faults.get(vm),
        )
        for vm in resources
    ]  # fmt: skip
    strays = sorted(
        vm for vm, r in reactions.items() if vm not in listed and r.approved_at is not None
    )
    vms += [_vm_verdict(facts, vm, reactions[vm], polls.get(vm), status, False) for vm in strays]
    missed = [v.vm for v in vms if v.verdict == "missed"]
    seen = sum(1 for v in vms if v.listed and v.first_seen is not None)
    total = len(resources)
    notice = (
        facts.not_before - facts.created_at
        if facts.not_before is not None and facts.created_at is not None
        else None
    )
    verdict, summary = _grade(facts, status, vms, missed, strays, seen, total)
    return EventVerdict(
        id=facts.id, operation_id=facts.operation_id, kind=facts.kind, scope=facts.scope_id,
        type=facts.event_type, source=facts.source, resources=resources,
        created_at=facts.created_at, not_before=facts.not_before, notice=notice,
        started_at=facts.started_at, start_reason=facts.start_reason, ended_at=facts.ended_at,
        approved_by=facts.approved_by, approved_at=facts.approved_at,
        approved_via=facts.approved_via, status=status,
        verdict=verdict, summary=summary, seen=seen, missed=missed,
        unlisted_approvals=strays, vms=vms,
    )  # fmt: skip


def _grade(
    facts: EventFacts,
    status: str,
    vms: list[VmVerdict],
    missed: list[str],
    strays: list[str],
    seen: int,
    total: int,
) -> tuple[str, str]:
    """The event's grade and a one-line summary of why."""
    if status == "scheduled":
        return "pending", f"Scheduled; {seen} of {total} VMs have seen it so far"
    if _created_started(facts):
        return "info", "created Started (no notice to react to)"
    if status == "canceled" and facts.started_at is None:
        return "info", f"canceled before it started; {seen} of {total} VMs had seen it"
    slowest = max((v.detected_after for v in vms if v.detected_after is not None), default=None)
    seen_line = f"{seen} of {total} VMs saw it" + (
        f" (slowest after {seconds(slowest)})" if slowest is not None else ""
    )
    if total == seen == 1 and slowest is not None:
        seen_line = f"{vms[0].vm} saw it after {seconds(slowest)}"
    if missed:
        names = ", ".join(missed[:5]) + (f" and {len(missed) - 5} more" if len(missed) > 5 else "")
        line = f"{len(missed)} of {total} VMs missed it ({names})"
        return "fail", line + (f"; {seen_line}" if seen else "")
    approval = _approval_line(facts)
    if strays:
        return "warn", f"{seen_line}; {approval}; approved by unlisted VMs: {', '.join(strays)}"
    if facts.start_reason == "not_before":
        if facts.approved_by is None:
            return "warn", f"{seen_line}; nobody approved: it started at NotBefore"
        if facts.not_before is not None and (facts.approved_at or 0.0) > facts.not_before:
            return "warn", f"{seen_line}; {approval}: it had started at NotBefore"
        return "ok", (
            f"{seen_line}; {approval}; it started at NotBefore, as its operation waited for"
            " its other events"
        )
    return "ok", f"{seen_line}; {approval}"


def _via(by: str, via: str | None) -> str:
    """`` via arm``: said unless it is the usual way (a VM on its endpoint, the operator on
    the control API)."""
    usual = "control" if by == "control" else "endpoint"
    return "" if via is None or via == usual else f" via {via}"


def _approval_line(facts: EventFacts) -> str:
    if facts.approved_by is None or facts.approved_at is None:
        if facts.start_reason == "forced":
            return "started early by the operator"
        return "not approved"
    who = "the operator" if facts.approved_by == "control" else facts.approved_by
    who += _via(facts.approved_by, facts.approved_via)
    if facts.not_before is not None and facts.approved_at <= facts.not_before:
        margin = seconds(facts.not_before - facts.approved_at)
        return f"approved by {who} {margin} before NotBefore"
    return f"approved by {who} after NotBefore"
