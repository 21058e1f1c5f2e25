"""The order a region-wide platform update visits the fleet: update domain by update
domain, host by host.

Azure rolls a platform update over a region one update domain at a time, a bounded number
of hosts at once, so no scope ever loses two update domains together. The walk is derived
from the topology alone (deterministic: a restart finds the same order again), so a
rollout need only remember where it is, a *cursor* ``(update domain, offset)``, never the
names of the VMs still to come.

Building it costs one pass over the fleet, once, mostly in C: for each update domain, the
fleet positions of its VMs sorted by host (``host_key * size + position``, one 64-bit
integer a VM). A counted run's VMs of one update domain are a strided slice of it (VM
``i`` is in update domain ``i % update_domains``), so no VM object is made. Each wave is
then a contiguous stretch of one update domain's array: O(wave) to cut.
"""

from __future__ import annotations

import math
import operator
from array import array
from collections.abc import Iterator
from itertools import repeat

from forewarn.fleet.vmtable import CountedRun, GivenRun, VmTable

__all__ = ["Cursor", "UpdateDomainWalk"]

#: Where the next wave begins: (update domain, offset into that domain's walk).
Cursor = tuple[int, int]


def _auto_index(host: str) -> int | None:
    """The pool index of an automatic host name (``host-7`` → 6), else None."""
    number = host[5:] if host.startswith("host-") else ""
    if number.isascii() and number.isdigit() and number[0] != "0":
        return int(number) - 1
    return None


class UpdateDomainWalk:
    """Every VM of the fleet, in walk order: update domains ascending; within one, hosts
    in order (automatic hosts ``host-1`` … by number, then hosts the fleet file names, by
    name), each host's VMs in fleet order."""

    def __init__(self, table: VmTable) -> None:
        self._size = size = max(len(table), 1)
        runs = table.runs
        given = [vm for run in runs if isinstance(run, GivenRun) for vm in run.vms]
        named = sorted({vm.host for vm in given if _auto_index(vm.host) is None})
        auto_bound = max(
            [max(run.hosts) + 1 for run in runs if isinstance(run, CountedRun) and run.hosts]
            + [index + 1 for vm in given if (index := _auto_index(vm.host)) is not None],
            default=0,
        )
        name_keys = {name: auto_bound + rank for rank, name in enumerate(named)}
        self._named = named
        self._auto_bound = auto_bound
        keys: dict[int, list[int]] = {}
        spans: dict[int, set[int]] = {}  # update domain → the keys of the hosts it spans
        mul, add = operator.mul, operator.add
        for run in runs:
            if isinstance(run, GivenRun):
                for position, vm in enumerate(run.vms, run.start):
                    index = _auto_index(vm.host)
                    host = name_keys[vm.host] if index is None else index
                    keys.setdefault(vm.update_domain, []).append(host * size + position)
                    spans.setdefault(vm.update_domain, set()).add(host)
                continue
            domains = run.update_domains
            for domain in range(domains):
                first = (domain - run.base) % domains  # offset of its first VM in the run
                if first >= run.count:
                    continue
                positions = range(run.start + first, run.start + run.count, domains)
                hosts = run.hosts[first::domains]
                spans.setdefault(domain, set()).update(hosts)
                keys.setdefault(domain, []).extend(
                    map(add, map(mul, hosts, repeat(size)), positions)
                )
        self.domains: tuple[int, ...] = tuple(sorted(keys))
        self._walks: dict[int, array[int]] = {}
        self._hosts: dict[int, int] = {}  # update domain → how many hosts it spans
        for domain in self.domains:
            ordered = keys.pop(domain)
            ordered.sort()
            self._walks[domain] = array("Q", ordered)
            self._hosts[domain] = len(spans.pop(domain))

    def __len__(self) -> int:
        """How many VMs the walk visits (the whole fleet)."""
        return sum(len(w) for w in self._walks.values())

    def start(self) -> Cursor | None:
        """The cursor of the first wave (None: an empty fleet)."""
        return (self.domains[0], 0) if self.domains else None

    def waves(self, hosts: int) -> int:
        """How many waves of at most ``hosts`` hosts the walk takes."""
        return sum(math.ceil(n / hosts) for n in self._hosts.values())

    def host_name(self, key: int) -> str:
        """The name of the host with walk key ``key``."""
        if key < self._auto_bound:
            return f"host-{key + 1}"
        return self._named[key - self._auto_bound]

    def wave(self, cursor: Cursor, hosts: int) -> tuple[list[int], Cursor | None]:
        """The fleet positions of the wave at ``cursor`` (its next ``hosts`` hosts of one
        update domain) and the cursor of the wave after it (None: this was the last)."""
        domain, offset = cursor
        walk = self._walks.get(domain)
        if walk is None or not 0 <= offset < len(walk):
            raise ValueError(f"no wave at {cursor} of this fleet")
        size = self._size
        positions: list[int] = []
        seen = 0
        last_host = -1
        end = offset
        for key in _from(walk, offset):
            host = key // size
            if host != last_host:
                if seen == hosts:
                    break
                seen += 1
                last_host = host
            positions.append(key % size)
            end += 1
        if end < len(walk):
            return positions, (domain, end)
        later = self.domains.index(domain) + 1
        return positions, ((self.domains[later], 0) if later < len(self.domains) else None)

    def host_of(self, cursor: Cursor) -> str:
        """The first host of the wave at ``cursor`` (for listings)."""
        domain, offset = cursor
        return self.host_name(self._walks[domain][offset] // self._size)


def _from(walk: array[int], offset: int) -> Iterator[int]:
    """The keys of ``walk`` from ``offset`` on, without copying the array."""
    for index in range(offset, len(walk)):
        yield walk[index]
