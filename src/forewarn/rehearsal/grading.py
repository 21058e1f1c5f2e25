"""The whole verdict on a rehearsal: every event graded, rolled up per operation and per
VM, the VMs not polling, stray approvals, latency distributions, and the central
controllers Event Grid told (each subscription).

Pure: it reads the facts the reaction tracker recorded (``ReactionData``), the time and
where each VM sits. The control API serves it; the CLI, the HTML report and the
dashboard show it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import msgspec

from forewarn.rehearsal.controllers import ControllerRollup, controller_rollups
from forewarn.rehearsal.coping import VmCoping
from forewarn.rehearsal.facts import ReactionData, VmReaction
from forewarn.rehearsal.rollups import (
    OPERATION_VERDICTS,
    OperationRollup,
    VmRollup,
    natural,
    operation_rollups,
    polling_states,
    vm_rollups,
)
from forewarn.rehearsal.verdicts import (
    DEFAULT_STALE_AFTER,
    EventVerdict,
    LatencyStats,
    PollVerdict,
    UnlistedApproval,
    event_verdict,
    stats,
)

__all__ = ["EVENT_VERDICTS", "ReactionReport", "grade"]

#: Event verdicts, as the totals list them.
EVENT_VERDICTS = ("ok", "warn", "fail", "pending", "info")


class ReactionReport(msgspec.Struct, kw_only=True):
    """The whole verdict.

    ``totals``: events per verdict; ``operation_totals``: operations (a rollout as one)
    per verdict, no-notice first; ``no_notice``: every VM hit with no notice;
    ``never_polled``: VMs an event listed or an operation hit that never polled (each
    once; ``stopped_polling`` has those that polled, then stopped)."""

    generated_at: float
    since: float | None
    stale_after: float
    totals: dict[str, int]
    operation_totals: dict[str, int]
    no_notice: list[str]
    operations: list[OperationRollup]
    vms: list[VmRollup]
    events: list[EventVerdict]
    stopped_polling: list[PollVerdict]
    never_polled: list[str]
    unlisted_approvals: list[UnlistedApproval]
    detection: LatencyStats
    approval: LatencyStats
    #: How each VM coped with injected endpoint faults (``coping.py``), filled by the caller.
    faults: list[VmCoping] = []
    #: Each central controller (an Event Grid subscription) graded as the VMs are
    #: (``controllers.py``): empty when no event was sent to any subscription.
    controllers: list[ControllerRollup] = []


def grade(
    data: ReactionData,
    *,
    now: float,
    since: float | None = None,
    stale_after: float = DEFAULT_STALE_AFTER,
    deleted: Collection[str] = (),
    scope_of: Mapping[str, str] | None = None,
) -> ReactionReport:
    """The verdict on ``data`` at ``now``; ``deleted`` VMs are not said to stop polling;
    ``scope_of`` says each VM's scope (to name the scopes of VMs hit with no notice)."""
    scope_of = scope_of or {}
    by_event: dict[str, dict[str, VmReaction]] = {}
    for reaction in data.vms:
        by_event.setdefault(reaction.event_id, {})[reaction.vm] = reaction
    polls = {p.vm: p for p in data.polls}
    facts = sorted(
        (f for f in data.events if since is None or (f.created_at or 0.0) >= since),
        key=lambda f: (f.created_at or 0.0, f.id),
    )
    operations = [o for o in data.operations if since is None or (o.created_at or 0.0) >= since]
    events = [event_verdict(f, by_event.get(f.id, {}), polls) for f in facts]
    stopped = sorted(
        (
            PollVerdict(
                vm=p.vm, first_poll=p.first_poll, last_poll=p.last_poll,
                silent_for=now - p.last_poll, api_version=p.api_version,
            )
            for p in data.polls
            if p.last_poll is not None and now - p.last_poll > stale_after and p.vm not in deleted
        ),
        key=lambda p: p.vm,
    )  # fmt: skip
    impacted = {v.vm for e in events for v in e.vms if v.listed}
    no_notice = sorted({vm for o in operations for vm in o.unnotified or ()}, key=natural)
    impacted.update(no_notice)
    never = sorted(
        (vm for vm in impacted
         if (polls.get(vm) is None or polls[vm].last_poll is None) and vm not in deleted),
        key=natural,
    )  # fmt: skip
    not_polling = polling_states(never, {p.vm: p.silent_for for p in stopped})
    rollups = operation_rollups(events, operations, scope_of, not_polling)
    strays = [
        UnlistedApproval(event_id=e.id, vm=v.vm, at=v.approved_at)
        for e in events
        for v in e.vms
        if not v.listed
    ]
    totals = dict.fromkeys(EVENT_VERDICTS, 0)
    for event in events:
        totals[event.verdict] += 1
    op_totals = dict.fromkeys(OPERATION_VERDICTS, 0)
    for rollup in rollups:
        op_totals[rollup.verdict] += 1
    detection = stats(
        v.detected_after
        for e in events
        for v in e.vms
        if v.listed and v.detected_after is not None and v.verdict != "created-started"
    )
    approval = stats(
        v.approved_after for e in events for v in e.vms if v.approved_after is not None
    )
    return ReactionReport(
        generated_at=now, since=since, stale_after=stale_after, totals=totals,
        operation_totals=op_totals, no_notice=no_notice, operations=rollups,
        vms=vm_rollups(events, operations, scope_of, not_polling), events=events,
        stopped_polling=stopped, never_polled=never, unlisted_approvals=strays,
        detection=detection, approval=approval,
        controllers=controller_rollups(events, data.deliveries),
    )  # fmt: skip
