"""The whole verdict on a rehearsal: every event graded, rolled up per operation and per
VM, the VMs not polling, stray approvals, latency distributions, and the central
controllers Event Grid told (each subscription).

Pure: it reads the facts the reaction tracker recorded (``ReactionData``), the time and
where each VM sits. The control API serves it; the CLI, the HTML report and the
dashboard show it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

import msgspec

from forewarn.fabric import CATALOGUE
from forewarn.fleet.names import natural
from forewarn.rehearsal.controllers import ControllerRollup, controller_rollups
from forewarn.rehearsal.coping import FaultTally, MissedEvent, VmCoping, coping, kinds_text
from forewarn.rehearsal.facts import OperationFacts, ReactionData, VmPolls, VmReaction
from forewarn.rehearsal.rollups import (
    OPERATION_VERDICTS,
    OperationRollup,
    VmRollup,
    operation_rollups,
    polling_states,
    vm_rollups,
)
from forewarn.rehearsal.scopetally import (
    EventScope,
    KindTally,
    ScopeTally,
    Where,
    event_scopes,
    kind_totals,
    scope_tallies,
)
from forewarn.rehearsal.sliced_drop import RECORDS, drop_sliced
from forewarn.rehearsal.sliced_sort import sort_sliced
from forewarn.rehearsal.verdicts import (
    DEFAULT_STALE_AFTER,
    EventVerdict,
    LatencyStats,
    PollVerdict,
    UnlistedApproval,
    event_verdict,
    seconds,
    stats,
)

__all__ = ["EVENT_VERDICTS", "ReactionReport", "ScopePage", "VmPage", "grade"]

#: Event verdicts, as the totals list them.
EVENT_VERDICTS = ("ok", "warn", "fail", "pending", "info")


class VmPage(msgspec.Struct, kw_only=True):
    """Which VMs' rows a report holds: ``which`` (all, attention, not-polling or a VM
    verdict), of ``scope`` (None: every scope), from ``offset``, at most ``limit`` of
    the ``total`` that match."""

    which: str
    scope: str | None
    offset: int
    limit: int
    total: int


class ScopePage(msgspec.Struct, kw_only=True):
    """Which per-scope rows a report holds: of ``which`` (``by_scope`` or
    ``event_scopes``), those of ``region`` and ``kind`` whose name holds ``q`` (None:
    any), from ``offset``, at most ``limit`` of the ``total`` that match, in the list's
    order (worst first)."""

    which: str
    region: str | None
    kind: str | None
    q: str | None = None
    offset: int
    limit: int
    total: int


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
    #: The VMs that need attention counted per scope, most first, and per region and
    #: scope kind (``scopetally.py``): what a big fleet's report shows by default.
    by_scope: list[ScopeTally] = []
    by_kind: list[KindTally] = []
    #: The events graded per scope (``scopetally.event_scopes``): one row a scope.
    event_scopes: list[EventScope] = []
    #: Whether the lists are cut to a size that does not grow with the fleet
    #: (``bounded.py``: the default of ``GET /api/v1/reactions``) ...
    rolled_up: bool = False
    #: ... and then the whole length of each list that was cut ("vms", "events", ...).
    trimmed: dict[str, int] = {}
    #: The page of per-VM rows ``vms`` holds when they were asked for (``?vms=``).
    vm_page: VmPage | None = None
    #: The page of per-scope rows ``by_scope`` or ``event_scopes`` holds when they were
    #: asked for (``?scopes=``: the rolled-up verdict keeps the first 50 of each region
    #: and kind).
    scope_page: ScopePage | None = None

    def let_go(self) -> None:
        """Empty the verdict's lists, a slice of rows at a time (``sliced_drop.py``): one
        kept after a region rollout over a million VMs is tens of millions of objects,
        and freed at once when the memo let it go it held the event loop (0.17 s at
        100,000 VMs). Only for a verdict nobody reads any more."""
        for op in self.operations:
            drop_sliced(op.no_notice, op.missed, op.not_approved, op.not_polling, op.scopes,
                        op.operations, op.events, *(g.vms for g in op.groups))  # fmt: skip
        names = (self.never_polled, self.no_notice, self.detection.values, self.approval.values)
        drop_sliced(*names)
        drop_sliced(  # rows of tens of objects each (a VM's lines, an event's verdicts)
            *(c.events for c in self.controllers), self.controllers, self.operations,
            self.vms, self.events, self.stopped_polling, self.unlisted_approvals,
            self.faults, self.by_scope, self.by_kind, self.event_scopes, rows=RECORDS,
        )  # fmt: skip


def grade(
    data: ReactionData,
    *,
    now: float,
    since: float | None = None,
    stale_after: float = DEFAULT_STALE_AFTER,
    deleted: Collection[str] = (),
    scope_of: Mapping[str, str] | None = None,
    faults: Mapping[str, FaultTally] | None = None,
    last_requests: Mapping[str, float] | None = None,
    where: Where | None = None,
) -> ReactionReport:
    """The verdict on ``data`` at ``now``; ``deleted`` VMs are not said to stop polling
    (one that never polled still never did); ``scope_of`` says each VM's scope (to name
    the scopes of VMs hit with no notice). ``faults`` are the requests injected endpoint
    faults took per VM (``ReactionTracker.fault_tallies``; only those since ``since``
    count): the reason a VM was not served, and how each VM coped (``last_requests``:
    each VM's last request the platform saw); ``where`` says each scope's region and
    kind (the roll-up ``by_scope`` and ``by_kind``)."""
    scope_of = scope_of or {}
    tallies = {vm: w for vm, t in (faults or {}).items() if (w := t.window(since)) is not None}
    by_event: dict[str, dict[str, VmReaction]] = {}
    for reaction in data.vms:
        by_event.setdefault(reaction.event_id, {})[reaction.vm] = reaction
    polls = {p.vm: p for p in data.polls}
    facts = sort_sliced(
        (f for f in data.events if since is None or (f.created_at or 0.0) >= since),
        key=lambda f: (f.created_at or 0.0, f.id),
    )
    operations = [o for o in data.operations if since is None or (o.created_at or 0.0) >= since]
    events = [event_verdict(f, by_event.get(f.id, {}), polls, tallies) for f in facts]
    impacted = {v.vm for e in events for v in e.vms if v.listed}
    no_notice = sort_sliced({vm for o in operations for vm in o.unnotified or ()}, key=natural)
    impacted.update(no_notice)
    gone = _gone(operations, polls, deleted)
    stopped, never, faulted = _silences(
        data, polls, impacted, tallies, now=now, stale_after=stale_after, deleted=gone
    )
    not_polling = polling_states(never, {p.vm: p.silent_for for p in stopped}, faulted)
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
        v.approved_after
        for e in events
        for v in e.vms
        if v.approved_after is not None and v.approved_in_time is not False
    )
    per_vm = vm_rollups(events, operations, scope_of, not_polling)
    # every VM of the lists below has a row: its scope looked up once, there (a look-up
    # in the fleet's table parses the name; a million VMs are in three lists)
    scope_by_vm = {r.vm: r.scope for r in per_vm if r.scope is not None}
    failed = [v.vm for v in per_vm if v.first_failed_at is not None]
    missed = {v.vm for e in events for v in e.vms if v.verdict == "missed"}
    stopped_vms = [p.vm for p in stopped]
    by_scope = scope_tallies({
        "failed": failed, "missed": missed, "no_notice": no_notice, "never_polled": never,
        "stopped_polling": stopped_vms,
    }, scope_by_vm, where)  # fmt: skip
    report = ReactionReport(
        generated_at=now, since=since, stale_after=stale_after, totals=totals,
        operation_totals=op_totals, no_notice=no_notice, operations=rollups,
        vms=per_vm, events=events, by_scope=by_scope, by_kind=kind_totals(by_scope),
        event_scopes=event_scopes(events, where),
        stopped_polling=stopped, never_polled=never, unlisted_approvals=strays,
        detection=detection, approval=approval,
        controllers=controller_rollups(events, data.deliveries),
    )  # fmt: skip
    if tallies:  # how each VM coped with injected endpoint faults
        if last_requests is None:
            last_requests = {p.vm: p.last_poll for p in data.polls if p.last_poll is not None}
        missing = (
            MissedEvent(vm=v.vm, event_id=e.id, created_at=e.created_at, started_at=e.started_at)
            for e in events for v in e.vms if v.verdict == "missed"
        )  # fmt: skip
        report.faults = coping(tallies, last_requests, missing)
    # the tables of a row a VM made on the way (a dict a VM in ``by_event``), let go in
    # pieces rather than all at once as this returns (``sliced_drop.py``)
    drop_sliced(by_event, polls, facts, impacted, not_polling, scope_by_vm, failed, missed,
                stopped_vms)  # fmt: skip
    return report


#: Operations that delete the VMs they hit (a Spot eviction, a scale-in).
_DELETING = frozenset(spec.kind.value for spec in CATALOGUE.values() if spec.deletes_vm)


def _gone(
    operations: Iterable[OperationFacts], polls: Mapping[str, VmPolls], deleted: Collection[str]
) -> set[str]:
    """The VMs deleted now, and those an operation of the window deleted that have not
    asked since: their silence is no stopped poller, even once ``fleet reset`` brought
    them back (so a drill's verdict is the same after the reset as before it)."""
    gone = set(deleted)
    for op in operations:
        at = op.ended_at or op.started_at
        if op.kind not in _DELETING or at is None:
            continue
        for vm in op.vms or ():
            last = polls[vm].last_poll if vm in polls else None
            if last is None or last <= at:
                gone.add(vm)
    return gone


def _silences(
    data: ReactionData,
    polls: Mapping[str, VmPolls],
    impacted: Collection[str],
    tallies: Mapping[str, FaultTally],
    *,
    now: float,
    stale_after: float,
    deleted: Collection[str],
) -> tuple[list[PollVerdict], list[str], dict[str, str]]:
    """The VMs that stopped polling, the VMs ``impacted`` that never polled, and those
    whose requests injected faults answered lately (they ask: neither stopped nor
    never, whatever their last served poll says). A deleted VM cannot poll: it is never
    said to have stopped, but one that never polled (before it was deleted) never did."""
    faulted: dict[str, str] = {}
    stopped: list[PollVerdict] = []

    def answered(vm: str, after: float | None) -> float | None:
        tally = tallies.get(vm)
        last = tally.last_answered() if tally is not None else None
        return None if last is None or (after is not None and last <= after) else last

    def note_faulted(vm: str, last: float) -> None:
        tally = tallies[vm]
        faulted[vm] = f"{kinds_text(tally.answered(None, None))}; last {seconds(now - last)} ago"

    for p in data.polls:
        if p.last_poll is None or now - p.last_poll <= stale_after or p.vm in deleted:
            continue
        last = answered(p.vm, p.last_poll)
        if last is not None and now - last <= stale_after:
            note_faulted(p.vm, last)
            continue
        stopped.append(PollVerdict(
            vm=p.vm, first_poll=p.first_poll, last_poll=p.last_poll,
            silent_for=now - max(p.last_poll, last or 0.0), api_version=p.api_version,
        ))  # fmt: skip
    never = []
    for vm in sort_sliced(impacted, key=natural):
        if polls.get(vm) is not None and polls[vm].last_poll is not None:
            continue
        last = answered(vm, None)
        if last is None:
            never.append(vm)
        elif now - last <= stale_after or vm in deleted:
            note_faulted(vm, last)
        else:  # it asked (every request faulted), then stopped
            stopped.append(PollVerdict(vm=vm, first_poll=None, last_poll=None,
                                       silent_for=now - last, api_version=None))  # fmt: skip
    return sort_sliced(stopped, key=lambda p: p.vm), never, faulted
