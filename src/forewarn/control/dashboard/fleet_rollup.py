"""The fleet's VMs counted per scope, and its VMs a page at a time: never a row per VM.

A million-VM fleet sent a row per VM was 105 MB before the page drew anything (issue 39).
``FleetTally`` counts, per scope, the VMs not running (by state), those that ever polled
and those that went silent, in one pass over the poll times (``tally_fleet``);
``kind_rollup`` sums those per region and scope kind for the page. A scope's VMs come on
demand, a page at a time (``scope_page``), and a search finds VMs by name or host across
the fleet (``search``): what a user opens, never the fleet.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from collections.abc import Iterable, Mapping

import msgspec

from forewarn.fleet import Topology

__all__ = [
    "PAGE_LIMIT",
    "SILENT_AFTER",
    "FleetTally",
    "ScopeIndex",
    "VmPage",
    "VmRow",
    "scope_page",
    "search",
    "tally_fleet",
]

#: A VM that polled, then not for this long, is silent (the page counts it per scope).
SILENT_AFTER = 60.0
#: VMs one page of a scope (or of a search) holds at most.
PAGE_LIMIT = 1000


class VmRow(msgspec.Struct, gc=False):
    """One VM as the page draws it (only strings and numbers: ``gc=False``)."""

    name: str
    scope: str
    host: str
    ud: int
    status: str
    polled: float | None


class VmPage(msgspec.Struct, kw_only=True):
    """A page of VMs: ``total`` in the scope (or matching the search), ``offset`` the first
    one's place among them, ``next`` the offset of the page after (None: the last)."""

    scope: str | None
    q: str
    total: int
    offset: int
    limit: int
    next: int | None
    vms: list[VmRow]


class ScopeIndex:
    """Each scope's region and kind, and each polled VM's scope (looked up once each:
    the table finds a generated VM's scope without making the VM)."""

    def __init__(self, topology: Topology) -> None:
        self._topology = topology
        self._scope_of = topology.vms.scope_ids()
        #: VM name → scope, for the VMs looked up so far (``scope_of`` fills it).
        self.cache: dict[str, str] = {}
        self._where: dict[str, tuple[str, str]] = {}

    def scope_of(self, vm: str) -> str | None:
        """The scope of VM ``vm`` (None: not in the fleet)."""
        scope = self.cache.get(vm)
        if scope is None:
            scope = self._scope_of.get(vm)
            if scope is not None:
                self.cache[vm] = scope
        return scope

    def where(self, scope_id: str) -> tuple[str, str]:
        """A scope's region (its first VM's location) and kind."""
        known = self._where.get(scope_id)
        if known is None:
            scope = self._topology.scopes[scope_id]
            first = next(iter(scope.vm_names), None)
            vm = self._topology.vms.get(first) if first is not None else None
            region = vm.location if vm is not None else "?"
            known = self._where[scope_id] = (region, scope.kind.value)
        return known


class FleetTally:
    """Per-scope counts added up from the poll times (fed in slices, so that a pass over
    a million can give the event loop back) and the VMs not running; ``moved``: the
    scopes where a VM's poll time or state changed since what was last sent."""

    __slots__ = ("_index", "_now", "_polled", "_silent", "_states", "moved")

    def __init__(self, index: ScopeIndex, now: float) -> None:
        self._index = index
        self._now = now
        self._polled: dict[str, int] = {}
        self._silent: dict[str, int] = {}
        self._states: dict[str, Counter[str]] = {}
        self.moved: set[str] = set()

    def add_polls(
        self, polls: Iterable[tuple[str, float]], sent: Mapping[str, float] | None = None
    ) -> None:
        """Count each of ``polls``; note its scope as moved when ``sent`` had another time.
        (The hot loop of a tick: a VM's scope from the index's cache, inline.)"""
        known, scope_of = self._index.cache, self._index.scope_of
        polled, silent, moved = self._polled, self._silent, self.moved
        stale = self._now - SILENT_AFTER
        last = sent.get if sent is not None else None
        for name, at in polls:
            scope = known.get(name) or scope_of(name)
            if scope is None:
                continue
            polled[scope] = polled.get(scope, 0) + 1
            if at <= stale:
                silent[scope] = silent.get(scope, 0) + 1
            if last is not None and last(name) != at:
                moved.add(scope)

    def add_statuses(
        self, statuses: Mapping[str, str], sent: Mapping[str, str] | None = None
    ) -> None:
        """Count the VMs not running by state; a VM whose state is not the one in ``sent``
        moves its scope."""
        scope_of = self._index.scope_of
        for name, status in statuses.items():
            scope = scope_of(name)
            if scope is not None:
                self._states.setdefault(scope, Counter())[status] += 1
        if sent is not None:
            for name in {*statuses, *sent}:
                if statuses.get(name) != sent.get(name) and (scope := scope_of(name)):
                    self.moved.add(scope)

    @property
    def polled(self) -> Mapping[str, int]:
        """Scope → its VMs that ever polled (a scope none of whose did is not in it)."""
        return self._polled

    @property
    def silent(self) -> Mapping[str, int]:
        """Scope → its VMs that polled, then went silent."""
        return self._silent

    @property
    def states(self) -> Mapping[str, Counter[str]]:
        """Scope → its VMs not running, by state."""
        return self._states

    def flagged(self) -> set[str]:
        """The scopes with a VM not running or gone silent."""
        return {*self._silent, *self._states}

    def count(self, scope_id: str) -> tuple[dict[str, int], int, int]:
        """One scope's VMs not running by state, polled, and silent."""
        states = self._states.get(scope_id)
        return (dict(states) if states else {}, self._polled.get(scope_id, 0),
                self._silent.get(scope_id, 0))  # fmt: skip


async def tally_fleet(
    index: ScopeIndex,
    now: float,
    polls: Mapping[str, float],
    statuses: Mapping[str, str],
    *,
    step: int,
    sent_polls: Mapping[str, float] | None = None,
    sent_status: Mapping[str, str] | None = None,
) -> FleetTally:
    """The fleet counted as of ``now`` (``moved`` against what was ``sent``, when given):
    the poll times ``step`` at a time, the event loop given back between (a million VMs
    that poll are some 0.5 s)."""
    tally = FleetTally(index, now)
    items = iter(polls.items())
    while chunk := list(itertools.islice(items, step)):
        tally.add_polls(chunk, sent_polls)
        await asyncio.sleep(0)
    tally.add_statuses(statuses, sent_status)
    return tally


def _row(topology: Topology, index: int, statuses: Mapping[str, str],
         polls: Mapping[str, float]) -> VmRow:  # fmt: skip
    vm = topology.vms.at(index)
    return VmRow(vm.name, vm.scope_id, vm.host, vm.update_domain,
                 statuses.get(vm.name, "running"), polls.get(vm.name))  # fmt: skip


def scope_page(
    topology: Topology,
    scope_id: str,
    *,
    offset: int,
    limit: int,
    q: str,
    statuses: Mapping[str, str],
    polls: Mapping[str, float],
) -> VmPage:
    """The VMs of scope ``scope_id`` (``KeyError``: no such scope) from ``offset``, at most
    ``limit``; with ``q``, only those whose name or host holds it (ignoring case)."""
    names = topology.scopes[scope_id].vm_names
    index = topology.vms.index
    if q:
        hosts = _hosts_matching(topology, q)
        wanted = q.lower()
        found = [
            i
            for name in names
            if (i := index(name)) is not None
            and (wanted in name.lower() or i in hosts)
        ]  # fmt: skip
        total, chosen = len(found), found[offset : offset + limit]
    else:
        total = len(names)
        chosen = [i for name in names[offset : offset + limit] if (i := index(name)) is not None]
    return _page(scope_id, q, total, offset, limit,
                 [_row(topology, i, statuses, polls) for i in chosen])  # fmt: skip


def _page(scope: str | None, q: str, total: int, offset: int, limit: int,
          rows: list[VmRow]) -> VmPage:  # fmt: skip
    """One page of VMs, and where the next one begins (None: this is the last)."""
    return VmPage(scope=scope, q=q, total=total, offset=offset, limit=limit,
                  next=offset + limit if offset + limit < total else None, vms=rows)  # fmt: skip


def _hosts_matching(topology: Topology, q: str) -> set[int]:
    """The fleet positions of the VMs on a host whose name holds ``q``."""
    wanted = q.lower()
    return {i for host, on in topology.vms.host_index().items() if wanted in host.lower()
            for i in on}  # fmt: skip


#: VM names a search reads per turn of the event loop.
SEARCH_SLICE = 20_000


async def search(
    topology: Topology,
    q: str,
    *,
    offset: int,
    limit: int,
    statuses: Mapping[str, str],
    polls: Mapping[str, float],
) -> VmPage:
    """The VMs of the fleet whose name or host holds ``q`` (ignoring case), in fleet order.
    A pass over every name (some 0.3 s for a million), ``SEARCH_SLICE`` at a time with the
    event loop given back between: on a thread it would hold the GIL from the VMs' polls
    just the same."""
    wanted = q.lower()
    found = _hosts_matching(topology, q)
    names = enumerate(topology.vms)
    while chunk := list(itertools.islice(names, SEARCH_SLICE)):
        found.update(i for i, name in chunk if wanted in name.lower())
        await asyncio.sleep(0)
    ordered = sorted(found)
    chosen = ordered[offset : offset + limit]
    return _page(None, q, len(ordered), offset, limit,
                 [_row(topology, i, statuses, polls) for i in chosen])  # fmt: skip
