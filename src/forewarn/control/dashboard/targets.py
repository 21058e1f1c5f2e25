"""The trigger form's suggestions: the VMs, hosts and scopes whose name starts with what
a user typed, a few at a time, from an index built once (issue 39).

The page used to carry every name as an option (10,001 scopes, and every VM it had
loaded, at a million VMs, rebuilt on each redraw). It now asks as the user types, and a
keystroke must not cost a pass over the fleet: hosts, scopes and VMs written out one by
one are kept sorted by name, grouped by length (a prefix is a range of each group, found
by bisection; shortest names come first, so ``host-1`` before ``host-10``), and VMs made
from a count are answered by arithmetic on their run (``big_12`` starts ``big_12``,
``big_120`` … ``big_129``, ``big_1200`` …: a range of numbers per length). Matching
ignores case; ``total`` counts every match, so the page can say how many it left out.
"""

from __future__ import annotations

import heapq
import itertools
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence

import msgspec

from forewarn.fleet import Topology
from forewarn.fleet.vmtable import CountedRun, GivenRun

__all__ = ["KINDS", "MAX_LIMIT", "Target", "TargetIndex", "Targets"]

#: What a target can be, in the order the operation planner looks names up.
KINDS = ("vm", "host", "scope")
#: Suggestions one answer holds at most.
MAX_LIMIT = 100
_TOP = "\U0010ffff"  # sorts after any character a name holds: the end of a prefix's range


class Target(msgspec.Struct, gc=False):
    """One suggestion: its name, what it is, and a few words on where (or how big)."""

    name: str
    kind: str
    detail: str


class Targets(msgspec.Struct, kw_only=True):
    """The suggestions for ``q``: at most ``limit``, shared fairly between the kinds
    asked for; ``total`` and ``totals`` count every match (by kind)."""

    q: str
    limit: int
    total: int
    totals: dict[str, int]
    targets: list[Target]


def _key(name: str) -> tuple[int, str]:
    """Shortest first, then by name ignoring case (``web-2`` before ``web-10``)."""
    return (len(name), name.lower())


class _Names:
    """Names grouped by length, each group sorted ignoring case: a prefix's matches are
    one range per group, counted and walked without looking at the others."""

    def __init__(self, names: Iterable[str]) -> None:
        groups: dict[int, list[tuple[str, str]]] = {}
        for name in names:
            lower = name.lower()
            groups.setdefault(len(name), []).append((lower, name))
        self._groups: list[tuple[int, list[str], list[str]]] = []
        for length in sorted(groups):
            pairs = sorted(groups[length])
            self._groups.append((length, [p[0] for p in pairs], [p[1] for p in pairs]))

    def _ranges(self, q: str) -> Iterator[tuple[list[str], int, int]]:
        for length, lowers, names in self._groups:
            if length >= len(q):
                lo = bisect_left(lowers, q)
                hi = bisect_right(lowers, q + _TOP, lo)
                if hi > lo:
                    yield names, lo, hi

    def count(self, q: str) -> int:
        """How many names start with ``q`` (lower-case)."""
        return sum(hi - lo for _, lo, hi in self._ranges(q))

    def matching(self, q: str) -> Iterator[str]:
        """The names that start with ``q`` (lower-case), shortest first."""
        for names, lo, hi in self._ranges(q):
            yield from itertools.islice(names, lo, hi)


def _numbers(digits: str, below: int) -> Iterator[int]:
    """The numbers under ``below`` whose decimal form starts with ``digits`` (any, when
    empty), shortest first: ``1``, ``10`` … ``19``, ``100`` …"""
    if not digits:
        first, width = 0, 1  # 0 … 9, then 10 … 99, …
        while first < below:
            yield from range(first, min(below, 10**width))
            first, width = 10**width, width + 1
        return
    if digits[0] == "0":  # names never pad: "0" names VM 0, "01" none
        if digits == "0" and below > 0:
            yield 0
        return
    start, scale = int(digits), 1
    while start * scale < below:
        yield from range(start * scale, min(below, (start + 1) * scale))
        scale *= 10


def _count_numbers(digits: str, below: int) -> int:
    """How many ``_numbers(digits, below)`` yields, by arithmetic."""
    if not digits:
        return below
    if digits[0] == "0":
        return 1 if digits == "0" and below > 0 else 0
    start, scale, total = int(digits), 1, 0
    while start * scale < below:
        total += min(below, (start + 1) * scale) - start * scale
        scale *= 10
    return total


class TargetIndex:
    """Every name a trigger can target, ready to answer a prefix: built once per fleet
    (some seconds at a million VMs: make it off the event loop)."""

    def __init__(self, topology: Topology) -> None:
        self._topology = topology
        table = topology.vms
        self._hosts_of = table.host_index()
        self._hosts = _Names(self._hosts_of)
        self._scopes = _Names(topology.scopes)
        given = (vm.name for run in table.runs if isinstance(run, GivenRun) for vm in run.vms)
        self._given = _Names(given)
        counted = [run for run in table.runs if isinstance(run, CountedRun)]
        counted.sort(key=lambda run: run.prefix.lower())
        self._runs = counted
        self._prefixes = [run.prefix.lower() for run in counted]
        #: VMs in the runs before each one (the runs a prefix covers whole: one range).
        self._before = list(itertools.accumulate((r.count for r in counted), initial=0))
        self._by_prefix = {run.prefix.lower(): run for run in counted}

    def _counted(self, q: str, limit: int) -> tuple[int, list[Iterator[str]]]:
        """How many counted VMs start with ``q`` (lower-case), and their names as a few
        streams (shortest first each): the runs whose prefix starts with ``q`` match
        whole (a range of the sorted prefixes: counted by sums, the first ``limit`` of
        them walked); a run whose prefix ``q`` starts with matches by its numbers."""
        lo = bisect_left(self._prefixes, q)
        hi = bisect_right(self._prefixes, q + _TOP, lo)
        total = self._before[hi] - self._before[lo]
        streams = [self._names(run, "") for run in self._runs[lo : min(hi, lo + limit)]]
        for cut in range(len(q)):  # a prefix shorter than q: q's tail must be digits
            run = self._by_prefix.get(q[:cut])
            digits = q[cut:]
            if run is not None and digits.isdigit() and digits.isascii():
                total += _count_numbers(digits, run.count)
                streams.append(self._names(run, digits))
        return total, streams

    @staticmethod
    def _names(run: CountedRun, digits: str) -> Iterator[str]:
        return (f"{run.prefix}{n}" for n in _numbers(digits, run.count))

    def _detail(self, kind: str, name: str) -> str:
        if kind == "host":
            count = len(self._hosts_of[name])
            return f"host of {count} VM{'' if count == 1 else 's'}"
        if kind == "scope":
            scope = self._topology.scopes[name]
            count = len(scope.vm_names)
            return f"{scope.kind.value} of {count:,} VM{'' if count == 1 else 's'}"
        index = self._topology.vms.index(name)
        return "VM" if index is None else f"VM in {self._topology.vms.scope_at(index)}"

    def suggest(self, q: str, *, limit: int, kinds: Sequence[str] = KINDS) -> Targets:
        """The names of ``kinds`` that start with ``q`` (ignoring case): at most ``limit``,
        each kind given its turn so a million VMs do not hide the one host that matches."""
        wanted = q.lower()
        totals: dict[str, int] = {}
        streams: dict[str, Iterator[str]] = {}
        if "vm" in kinds:
            counted, runs = self._counted(wanted, limit)
            totals["vm"] = counted + self._given.count(wanted)
            streams["vm"] = heapq.merge(self._given.matching(wanted), *runs, key=_key)
        if "host" in kinds:
            totals["host"] = self._hosts.count(wanted)
            streams["host"] = self._hosts.matching(wanted)
        if "scope" in kinds:
            totals["scope"] = self._scopes.count(wanted)
            streams["scope"] = self._scopes.matching(wanted)
        chosen: list[tuple[str, str]] = []
        live = [kind for kind in KINDS if kind in streams and totals[kind]]
        while live and len(chosen) < limit:  # one of each kind in turn
            for kind in list(live):
                name = next(streams[kind], None)
                if name is None:
                    live.remove(kind)
                elif len(chosen) < limit:
                    chosen.append((kind, name))
        chosen.sort(key=lambda pick: (pick[1].lower() != wanted, *_key(pick[1]),
                                      KINDS.index(pick[0])))  # fmt: skip
        targets = [Target(name, kind, self._detail(kind, name)) for kind, name in chosen]
        return Targets(q=q, limit=limit, total=sum(totals.values()), totals=totals,
                       targets=targets)  # fmt: skip
