"""The VMs that need attention, counted per scope: what the report and the dashboard show
of a big fleet by default (region, then scope kind, then scope; the VMs on demand).

A drill over a million VMs may leave 100,000 that never polled: a row for each is no
report anyone reads. A ``ScopeTally`` says how many of a scope's VMs failed, missed an
event, got no notice, never or no longer poll, and names the first of them, so the
verdict stays one screen at any fleet size; the per-VM lists stay in the report.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import msgspec

from forewarn.fleet.names import natural
from forewarn.rehearsal.rollups import OPERATION_VERDICTS
from forewarn.rehearsal.verdicts import EventVerdict

__all__ = [
    "EventScope",
    "KindTally",
    "ScopeTally",
    "Where",
    "event_scopes",
    "kind_totals",
    "scope_tallies",
]

#: Where a scope is: its region and its kind (``standalone``, ``scale_set`` ...).
Where = Callable[[str], tuple[str, str]]


class ScopeTally(msgspec.Struct, kw_only=True):
    """The VMs of one scope that need attention, counted by why (a VM may count in more
    than one column; ``vms`` counts each once); ``first``: the first of them by name."""

    region: str
    kind: str
    scope: str
    vms: int
    failed: int
    missed: int
    no_notice: int
    never_polled: int
    stopped_polling: int
    first: str


_COLUMNS = ("failed", "missed", "no_notice", "never_polled", "stopped_polling")


def scope_tallies(
    lists: Mapping[str, Iterable[str]], scope_of: Mapping[str, str], where: Where | None
) -> list[ScopeTally]:
    """One tally per scope with a VM in any of ``lists`` (keyed by ``_COLUMNS``: the VMs
    that failed, missed, ...), most VMs first; ``where`` says a scope's region and kind
    (None: unknown)."""
    counts: dict[str, dict[str, int]] = {}
    members: dict[str, set[str]] = {}
    for column in _COLUMNS:
        for vm in lists.get(column, ()):
            scope = scope_of.get(vm, "?")
            row = counts.get(scope)
            if row is None:
                row = counts[scope] = dict.fromkeys(_COLUMNS, 0)
                members[scope] = set()
            row[column] += 1
            members[scope].add(vm)
    out = []
    for scope, row in counts.items():
        region, kind = where(scope) if where is not None and scope != "?" else ("?", "?")
        vms = members[scope]
        out.append(ScopeTally(region=region, kind=kind, scope=scope, vms=len(vms),
                              first=min(vms, key=natural), **row))  # fmt: skip
    out.sort(key=lambda t: natural(t.scope))
    out.sort(key=lambda t: -t.vms)
    return out


class KindTally(msgspec.Struct, kw_only=True):
    """The tallies of one region's scopes of one kind, summed (``scopes``: how many)."""

    region: str
    kind: str
    scopes: int = 0
    vms: int = 0
    failed: int = 0
    missed: int = 0
    no_notice: int = 0
    never_polled: int = 0
    stopped_polling: int = 0


def kind_totals(tallies: Iterable[ScopeTally]) -> list[KindTally]:
    """The tallies rolled up once more, per region and scope kind (most VMs first)."""
    rows: dict[tuple[str, str], KindTally] = {}
    for t in tallies:
        row = rows.get((t.region, t.kind))
        if row is None:
            row = rows[(t.region, t.kind)] = KindTally(region=t.region, kind=t.kind)
        row.scopes += 1
        for column in ("vms", *_COLUMNS):
            setattr(row, column, getattr(row, column) + getattr(t, column))
    return sorted(rows.values(), key=lambda r: -r.vms)


class EventScope(msgspec.Struct, kw_only=True):
    """The events of one scope, graded together: how many, per verdict, the worst, how
    many VMs they listed, and what the worst one said (``event``: its id). A region
    rollout gives a scope an event per wave it is in: a row per scope stays one row
    whatever the scope's size (the JUnit file's test case, the dashboard's line)."""

    region: str
    kind: str
    scope: str
    events: int
    verdict: str
    totals: dict[str, int]
    vms: int
    event: str
    summary: str


def event_scopes(events: Iterable[EventVerdict], where: Where | None) -> list[EventScope]:
    """One row per scope an event was in, worst verdict first, then by name."""
    grouped: dict[str, list[EventVerdict]] = {}
    for e in events:
        grouped.setdefault(e.scope or "?", []).append(e)
    out = []
    for scope, evs in grouped.items():
        totals: dict[str, int] = {}
        for e in evs:
            totals[e.verdict] = totals.get(e.verdict, 0) + 1
        worst = min(evs, key=lambda e: _RANK.get(e.verdict, 99))
        region, kind = where(scope) if where is not None and scope != "?" else ("?", "?")
        listed = {vm for e in evs for vm in e.resources}
        out.append(EventScope(region=region, kind=kind, scope=scope, events=len(evs),
                              verdict=worst.verdict, totals=totals, vms=len(listed),
                              event=worst.id, summary=worst.summary))  # fmt: skip
    out.sort(key=lambda t: natural(t.scope))
    out.sort(key=lambda t: _RANK.get(t.verdict, 99))
    return out


_RANK = {v: i for i, v in enumerate(OPERATION_VERDICTS)}
