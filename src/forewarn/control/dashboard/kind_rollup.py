"""The fleet rolled up by region and scope kind: what the dashboard shows first (issue 39).

A million VMs are 10,001 scopes, and a row a scope was a 1.62 MB snapshot that grew with
the fleet. The snapshot holds one row per region and scope kind instead: its scopes and
VMs counted (not running by state, polled, silent, live events) and only the first
``KEPT`` of its scopes, worst first: live events, then VMs not running, then VMs gone
silent, then by name as people count. Every other scope comes a page at a time, in the
same order (``scopes_page``: ``GET /api/v1/dashboard/scopes``), so a kind's page at offset
50 goes on where the snapshot stopped; as the verdict keeps the worst 50 scopes of each
region and kind (``rehearsal/bounded.py``) and pages the rest.

Only the scopes with something to show are sorted (``FleetTally.flagged`` and those with
live events); the rest follow in name order, sorted once (``KindIndex``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import msgspec

from forewarn.control.dashboard.fleet_rollup import FleetTally, ScopeIndex
from forewarn.fabric import Fabric
from forewarn.fleet.names import natural

__all__ = [
    "KEPT",
    "MOVED",
    "Counted",
    "KindIndex",
    "KindRollup",
    "KindTotals",
    "ScopePage",
    "ScopeRow",
    "kind_rollup",
    "kind_totals",
    "scopes_page",
]

#: Scopes of each region and kind the snapshot holds (the worst first).
KEPT = 50
#: Scopes a tick names where a VM moved (``moved_total`` counts them all).
MOVED = 100

Key = tuple[str, str]
#: A scope's place in the worst-first order: live events, not running, silent (each the
#: more the earlier: negated), then its name's place in name order, then its id.
Rank = tuple[int, int, int, int, str]


class ScopeRow(msgspec.Struct, gc=False):
    """One scope as the page lists it: where it is, and its VMs counted."""

    id: str
    region: str
    kind: str
    update_domains: int
    incarnation: int
    enabled: bool
    vms: int
    states: dict[str, int]
    polled: int
    silent: int


class KindTotals(msgspec.Struct, gc=False):
    """One region and scope kind, every scope of it counted (what a tick sends again when
    it changed)."""

    region: str
    kind: str
    scopes: int
    vms: int
    states: dict[str, int]
    polled: int
    silent: int
    events: int


class KindRollup(KindTotals, gc=False):
    """A kind's totals and its first ``KEPT`` scopes, worst first (the snapshot's)."""

    worst: list[ScopeRow]


class ScopePage(msgspec.Struct, kw_only=True):
    """A page of scopes, worst first: ``total`` of ``region`` and ``kind`` (None: any)
    whose name holds ``q``, ``offset`` the first one's place, ``next`` the offset of the
    page after (None: the last)."""

    region: str | None
    kind: str | None
    q: str
    total: int
    offset: int
    limit: int
    next: int | None
    scopes: list[ScopeRow]


class KindIndex:
    """Each region and kind's scopes in name order, and its VMs: the fleet's layout, read
    once (some 20 ms for 10,001 scopes)."""

    def __init__(self, fabric: Fabric, index: ScopeIndex) -> None:
        topology = fabric.topology
        self.where = index.where
        self.all = sorted(topology.scopes, key=natural)
        #: Each scope's place in name order (the last key of the worst-first order).
        self.rank = {sid: n for n, sid in enumerate(self.all)}
        order: dict[Key, list[str]] = {}
        for sid in self.all:
            order.setdefault(self.where(sid), []).append(sid)
        self.order = {key: tuple(order[key]) for key in sorted(order)}
        self.vms = {key: sum(len(topology.scopes[s].vm_names) for s in ids)
                    for key, ids in self.order.items()}  # fmt: skip
        self.regions = sorted({region for region, _ in self.order})


@dataclass(frozen=True, slots=True)
class Counted:
    """The fleet's counts a roll-up reads: the tally, and the live events per scope."""

    tally: FleetTally
    events: Counter[str]

    @classmethod
    def of(cls, fabric: Fabric, tally: FleetTally) -> Counted:
        """``tally`` with the fabric's live events counted per scope."""
        return cls(tally, Counter(e.scope_id for e in fabric.events()))


def _flagged(kinds: KindIndex, counted: Counted) -> dict[Key, list[Rank]]:
    """The scopes with live events, VMs not running or silent, per kind, worst first."""
    tally, events, rank = counted.tally, counted.events, kinds.rank
    out: dict[Key, list[Rank]] = {}
    for sid in tally.flagged() | {s for s in events if s in rank}:
        states, _, silent = tally.count(sid)
        place = (-events.get(sid, 0), -sum(states.values()), -silent, rank[sid], sid)
        out.setdefault(kinds.where(sid), []).append(place)
    for ranks in out.values():
        ranks.sort()
    return out


def _in_order(names: Sequence[str], first: list[str], offset: int, limit: int) -> list[str]:
    """``limit`` scopes from ``offset`` of ``first`` followed by the rest of ``names``."""
    chosen = first[offset : offset + limit]
    if len(chosen) < limit:
        skip, taken = max(0, offset - len(first)), set(first)
        for sid in names:
            if sid in taken:
                continue
            if skip:
                skip -= 1
                continue
            chosen.append(sid)
            if len(chosen) == limit:
                break
    return chosen


def _row(fabric: Fabric, kinds: KindIndex, tally: FleetTally, sid: str) -> ScopeRow:
    scope = fabric.topology.scopes[sid]
    region, kind = kinds.where(sid)
    states, polled, silent = tally.count(sid)
    incarnation, enabled = fabric.view(sid).incarnation, fabric.is_enabled(sid)
    return ScopeRow(sid, region, kind, scope.update_domains, incarnation, enabled,
                    len(scope.vm_names), states, polled, silent)  # fmt: skip


def kind_totals(kinds: KindIndex, counted: Counted) -> dict[Key, KindTotals]:
    """Every region and kind, its scopes counted (a pass over the scopes that polled,
    have VMs not running or live events: never one over the fleet's VMs)."""
    out = {key: KindTotals(key[0], key[1], len(ids), kinds.vms[key], {}, 0, 0, 0)
           for key, ids in kinds.order.items()}  # fmt: skip
    tally, where = counted.tally, kinds.where
    for sid, n in tally.polled.items():
        out[where(sid)].polled += n
    for sid, n in tally.silent.items():
        out[where(sid)].silent += n
    for sid, states in tally.states.items():
        into = out[where(sid)].states
        for state, n in states.items():
            into[state] = into.get(state, 0) + n
    for sid, n in counted.events.items():
        if sid in kinds.rank:
            out[where(sid)].events += n
    return out


def kind_rollup(fabric: Fabric, kinds: KindIndex, counted: Counted) -> list[KindRollup]:
    """Every region and kind (in that order): its totals and first ``KEPT`` scopes."""
    flagged = _flagged(kinds, counted)
    out = []
    for key, t in kind_totals(kinds, counted).items():
        first = [place[-1] for place in flagged.get(key, [])]
        worst = [_row(fabric, kinds, counted.tally, sid)
                 for sid in _in_order(kinds.order[key], first, 0, KEPT)]  # fmt: skip
        out.append(KindRollup(t.region, t.kind, t.scopes, t.vms, t.states, t.polled,
                              t.silent, t.events, worst))  # fmt: skip
    return out


def _holding(names: Iterable[str], q: str) -> list[str]:
    wanted = q.lower()
    return [sid for sid in names if wanted in sid.lower()]


def scopes_page(
    fabric: Fabric,
    kinds: KindIndex,
    counted: Counted,
    *,
    region: str | None,
    kind: str | None,
    q: str,
    offset: int,
    limit: int,
) -> ScopePage:
    """The scopes of ``region`` and ``kind`` (None: any) whose name holds ``q`` (any
    case; empty: every one), worst first, from ``offset``, at most ``limit``."""
    keys = [key for key in kinds.order
            if region in (None, key[0]) and kind in (None, key[1])]  # fmt: skip
    if len(keys) == 1:
        names: Sequence[str] = kinds.order[keys[0]]
    else:
        chosen = set(keys)
        names = [sid for sid in kinds.all if kinds.where(sid) in chosen]
    flagged = _flagged(kinds, counted)
    first = [place[-1] for place in sorted(p for key in keys for p in flagged.get(key, []))]
    if q:
        names, first = _holding(names, q), _holding(first, q)
    ids = _in_order(names, first, offset, limit)
    total = len(names)
    return ScopePage(region=region, kind=kind, q=q, total=total, offset=offset, limit=limit,
                     next=offset + limit if offset + limit < total else None,
                     scopes=[_row(fabric, kinds, counted.tally, sid) for sid in ids])  # fmt: skip
