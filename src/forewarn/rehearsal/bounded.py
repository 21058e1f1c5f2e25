"""The verdict cut to a size that does not grow with the fleet, and pages of its VMs.

After a platform update rolled over a region every VM was in an event: the whole verdict
holds a row per VM (``vms``), each event the verdict of each VM it listed, each
operation every VM named. ``bounded`` keeps what a reader reads (totals, operations,
the per-scope roll-ups, the newest events) and cuts every list of VMs to a few, saying
in ``trimmed`` how long each was, so ``GET /api/v1/reactions`` answers in about the
same bytes at 1,000 VMs or 1,000,000. ``vm_page`` is the way back to single VMs: a
page of the per-VM rows, filtered by verdict and scope.

The per-scope roll-ups (``by_scope``, ``event_scopes``) are a row a scope: 10,001 rows
after a region rollout over a million VMs, megabytes. ``bounded`` keeps the first
``SCOPE_ROWS`` of each region and scope kind (the worst: the lists are worst first) and
``by_kind`` sums every one; ``scope_page`` is the way back to every row, a page at a time.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from forewarn.fleet.topology import ScopeKind
from forewarn.rehearsal.grading import ReactionReport, ScopePage, VmPage
from forewarn.rehearsal.rollups import VM_VERDICTS, VmRollup, needs_attention
from forewarn.rehearsal.scopetally import EventScope, ScopeTally
from forewarn.rehearsal.verdicts import EventVerdict, LatencyStats

__all__ = [
    "EVENTS",
    "NAMES",
    "ROWS",
    "SCOPE_KINDS",
    "SCOPE_LISTS",
    "SCOPE_ROWS",
    "VM_FILTERS",
    "bounded",
    "scope_page",
    "vm_page",
]

#: Rows kept of a list of rows (VMs, operations, scopes of an operation, faults ...).
ROWS = 100
#: Names kept of a list of names inside one row (an operation's, an event's VMs).
NAMES = 20
#: Events kept: the newest (the totals and ``event_scopes`` count every one).
EVENTS = 100
#: What ``vm_page`` filters on: every VM, those needing attention, those not polling,
#: or one VM verdict ("none": in the roll-up only for not polling).
VM_FILTERS = ("all", "attention", "not-polling", *VM_VERDICTS, "none")
#: Per-scope rows kept of each region and scope kind (``by_scope``, ``event_scopes``).
SCOPE_ROWS = 50
#: The per-scope lists ``scope_page`` pages, and the scope kinds it filters on.
SCOPE_LISTS = ("by_scope", "event_scopes")
SCOPE_KINDS = tuple(k.value for k in ScopeKind)

T = TypeVar("T")
Row = TypeVar("Row", ScopeTally, EventScope)


def _cut(items: list[T], limit: int, name: str, trimmed: dict[str, int]) -> list[T]:
    if len(items) > limit:
        trimmed[name] = len(items)
        return items[:limit]
    return items


def _short_stats(stats: LatencyStats) -> LatencyStats:
    """The distribution's figures without its every value (the HTML page draws those)."""
    return msgspec.structs.replace(stats, values=[]) if len(stats.values) > ROWS else stats


def _event(e: EventVerdict) -> EventVerdict:
    cut: dict[str, int] = {}
    out = msgspec.structs.replace(
        e,
        resources=_cut(e.resources, NAMES, "resources", cut),
        missed=_cut(e.missed, NAMES, "missed", cut),
        unlisted_approvals=_cut(e.unlisted_approvals, NAMES, "unlisted_approvals", cut),
        vms=_cut(e.vms, NAMES, "vms", cut),
    )
    return msgspec.structs.replace(out, trimmed=cut) if cut else out


def _per_kind(rows: list[Row], name: str, trimmed: dict[str, int]) -> list[Row]:
    """The first ``SCOPE_ROWS`` of ``rows`` of each region and kind, in their order."""
    seen: dict[tuple[str, str], int] = {}
    kept = []
    for row in rows:
        n = seen[(row.region, row.kind)] = seen.get((row.region, row.kind), 0) + 1
        if n <= SCOPE_ROWS:
            kept.append(row)
    if len(kept) < len(rows):
        trimmed[name] = len(rows)
    return kept


def bounded(
    report: ReactionReport, page: VmPage | None = None, scopes: ScopePage | None = None
) -> ReactionReport:
    """``report`` with every list cut (``ROWS``, ``NAMES``, ``EVENTS``, ``SCOPE_ROWS``
    of each region and kind), ``rolled_up`` set and ``trimmed`` naming each list cut and
    its whole length; ``vms`` is ``page``'s rows instead when one is asked for
    (``vm_page``), and the list ``scopes`` names its rows (``scope_page``)."""
    trimmed: dict[str, int] = {}
    by_scope = _per_kind(report.by_scope, "by_scope", trimmed)
    per_scope_events = _per_kind(report.event_scopes, "event_scopes", trimmed)
    if scopes is not None and scopes.which == "by_scope":
        by_scope = scope_rows(report.by_scope, scopes)
        trimmed.pop("by_scope", None)  # the page says how many match
    elif scopes is not None:
        per_scope_events = scope_rows(report.event_scopes, scopes)
        trimmed.pop("event_scopes", None)
    operations = []
    for op in _cut(report.operations, ROWS, "operations", trimmed):
        cut: dict[str, int] = {}
        fields: dict[str, Any] = {
            name: _cut(getattr(op, name), NAMES, name, cut)
            for name in ("no_notice", "missed", "not_approved", "not_polling")
        }
        for name in ("scopes", "operations", "events"):  # rows the dashboard lists
            fields[name] = _cut(getattr(op, name), ROWS, name, cut)
        fields["groups"] = [
            msgspec.structs.replace(g, vms=_cut(g.vms, NAMES, f"groups.{g.label}", cut))
            for g in op.groups
        ]
        operations.append(msgspec.structs.replace(op, **fields, trimmed=cut))
    events = report.events
    if len(events) > EVENTS:
        trimmed["events"] = len(events)
        events = events[-EVENTS:]  # the newest (events are in order of creation)
    controllers = [
        msgspec.structs.replace(c, events=_cut(c.events, ROWS, f"controllers.{c.subscription}",
                                               trimmed))
        for c in report.controllers
    ]  # fmt: skip
    vms = page_rows(report.vms, page) if page is not None else report.vms
    if page is None:
        vms = _cut(vms, ROWS, "vms", trimmed)
    return msgspec.structs.replace(
        report,
        no_notice=_cut(report.no_notice, ROWS, "no_notice", trimmed),
        operations=operations,
        vms=vms,
        events=[_event(e) for e in events],
        stopped_polling=_cut(report.stopped_polling, ROWS, "stopped_polling", trimmed),
        never_polled=_cut(report.never_polled, ROWS, "never_polled", trimmed),
        unlisted_approvals=_cut(report.unlisted_approvals, ROWS, "unlisted_approvals", trimmed),
        detection=_short_stats(report.detection),
        approval=_short_stats(report.approval),
        faults=_cut(report.faults, ROWS, "faults", trimmed),
        controllers=controllers,
        by_scope=by_scope,
        event_scopes=per_scope_events,
        rolled_up=True,
        trimmed=trimmed,
        vm_page=page,
        scope_page=scopes,
    )


def _matches(vm: VmRollup, which: str, scope: str | None) -> bool:
    if scope is not None and vm.scope != scope:
        return False
    if which == "all":
        return True
    if which == "attention":
        return needs_attention(vm)
    if which == "not-polling":
        return vm.polling != "polling"
    return vm.verdict == which


def vm_page(
    report: ReactionReport, which: str, scope: str | None, offset: int, limit: int
) -> VmPage:
    """The page of ``report.vms`` matching ``which`` (one of ``VM_FILTERS``) and
    ``scope``, from ``offset``, at most ``limit`` rows, in the report's order (the VMs
    that failed first, earliest first); ``total``: how many match."""
    total = sum(1 for v in report.vms if _matches(v, which, scope))
    return VmPage(which=which, scope=scope, offset=offset, limit=limit, total=total)


def page_rows(vms: list[VmRollup], page: VmPage) -> list[VmRollup]:
    """The rows of ``page`` (``vm_page``) out of every VM's."""
    out: list[VmRollup] = []
    skipped = 0
    for v in vms:
        if not _matches(v, page.which, page.scope):
            continue
        if skipped < page.offset:
            skipped += 1
            continue
        if len(out) >= page.limit:
            break
        out.append(v)
    return out


def _in(row: ScopeTally | EventScope, page: ScopePage) -> bool:
    return (
        (page.region is None or row.region == page.region)
        and (page.kind is None or row.kind == page.kind)
        and (page.q is None or page.q.lower() in row.scope.lower())
    )


def scope_page(
    report: ReactionReport,
    which: str,
    *,
    region: str | None = None,
    kind: str | None = None,
    q: str | None = None,
    offset: int = 0,
    limit: int = ROWS,
) -> ScopePage:
    """The page of ``report``'s list ``which`` (one of ``SCOPE_LISTS``) of ``region``
    and ``kind`` whose name holds ``q`` (any case; None: any), from ``offset``, at most
    ``limit`` rows, in the list's order (the worst first); ``total``: how many match."""
    page = ScopePage(which=which, region=region, kind=kind, q=q, offset=offset, limit=limit,
                     total=0)  # fmt: skip
    rows: list[ScopeTally] | list[EventScope] = getattr(report, which)
    page.total = sum(1 for t in rows if _in(t, page))
    return page


def scope_rows(rows: list[Row], page: ScopePage) -> list[Row]:
    """The rows of ``page`` (``scope_page``) out of the whole list."""
    matching = [t for t in rows if _in(t, page)]
    return matching[page.offset : page.offset + page.limit]
