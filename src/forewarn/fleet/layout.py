"""Where a fleet's VMs answer and run: automatic loopback addresses and hosts.

Both are handed out in fleet order, the same way every time: a database stores its fleet
file, not the layout, so every restart (and every upgrade) must lay the fleet out exactly
as before. A 100,000-VM fleet is laid out on every start, so this uses plain integers and
dicts, O(VMs), no ``ipaddress`` objects and no scans that grow with the fleet.
"""

from __future__ import annotations

import ipaddress
from array import array
from collections.abc import Iterator, Mapping, Sequence
from math import gcd

from forewarn.fleet.errors import FleetError

__all__ = [
    "BLOCK",
    "LOCALHOST",
    "POOL",
    "AddressPlan",
    "HostAssigner",
    "assign_addresses",
    "normalize_address",
    "parse_prefix",
]

#: Automatic addresses per /16: ``a.b.0.1`` … ``a.b.249.250`` (no .0, no .251-.255).
BLOCK = 250 * 250
#: Every /16 of the prefix's /8, starting at the prefix's own and wrapping after .255.
POOL = 256 * BLOCK
#: Plain requests come from here and belong to the default VM: never an automatic address.
LOCALHOST = "127.0.0.1"

_OCTETS = [str(i) for i in range(256)]


def _is_octet(text: str) -> bool:
    """A decimal 0-255 without leading zeros (as ``ipaddress`` accepts them)."""
    return (
        text.isascii()
        and text.isdigit()
        and (len(text) == 1 or text[0] != "0")
        and len(text) <= 3
        and int(text) <= 255
    )


def parse_prefix(prefix: str) -> tuple[int, int]:
    """The two octets of an ``address_prefix`` such as ``127.1``."""
    parts = prefix.split(".")
    if len(parts) != 2 or not all(_is_octet(p) for p in parts):
        raise FleetError(f"address_prefix {prefix!r} must be two octets like '127.1'")
    return int(parts[0]), int(parts[1])


def normalize_address(text: str) -> str | None:
    """An explicit address in the form sockets report it, or None if it is not one.

    Dotted IPv4 is checked without building an object (the common case, cheap for big
    explicit lists); anything else goes through ``ipaddress``. An IPv4-mapped IPv6
    address becomes plain IPv4, as the endpoint sees its clients.
    """
    parts = text.split(".")
    if len(parts) == 4 and all(_is_octet(p) for p in parts):
        return text
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


def _slot_address(first: int, second: int, slot: int) -> str:
    block, rest = divmod(slot, BLOCK)
    head = f"{first}.{(second + block) % 256}."
    return head + _OCTETS[rest // 250] + "." + _OCTETS[rest % 250 + 1]


def _slot_of(first: int, second: int, address: str) -> int | None:
    """The pool slot whose address is ``address``, if any (the inverse of the layout)."""
    parts = address.split(".")
    if len(parts) != 4 or not all(_is_octet(p) for p in parts) or int(parts[0]) != first:
        return None
    third, fourth = int(parts[2]), int(parts[3])
    if third >= 250 or not 1 <= fourth <= 250:
        return None
    return ((int(parts[1]) - second) % 256) * BLOCK + third * 250 + fourth - 1


class AddressPlan:
    """The address of every fleet position, without a list of them.

    Position i gets slot i of the pool (so the first 62,500 VMs keep the ``prefix.x.y``
    addresses of earlier versions, and VMs after an explicit one keep theirs). A slot
    whose address is reserved, 127.0.0.1 or any VM's explicit address, is never handed
    out: its VM gets a spare instead, first from the slots after the fleet, then from the
    slots VMs with explicit addresses left unused. Only the explicit addresses and the
    spares are kept; every other address is arithmetic both ways (``address``, ``slot``).
    ``pool`` is the number of slots (tests make it small to reach the end).
    """

    def __init__(
        self, prefix: str, total: int, explicit: Mapping[int, str], *, pool: int = POOL
    ) -> None:
        """``explicit``: fleet position → that VM's own address (normalized)."""
        self._first, self._second = first, second = parse_prefix(prefix)
        self._total, self._pool = total, pool
        self._fixed: dict[int, str] = dict(explicit)
        reserved = set(self._fixed.values())
        reserved.add(LOCALHOST)
        needy = [s for s in map(self._own_slot, reserved) if s is not None and s < total]
        needy += range(pool, total)
        needy = sorted(s for s in set(needy) if s not in self._fixed)
        if needy:
            spares = _spares(first, second, total, sorted(self._fixed), reserved, pool)
            for slot in needy:
                spare = next(spares, None)
                if spare is None:
                    held = (self._own_slot(a) for a in reserved)
                    taken = sum(1 for index in held if index is not None and index < pool)
                    wanting = total - len(self._fixed)
                    raise FleetError(
                        f"at most {pool - taken} VMs get automatic addresses in "
                        f"{first}.0.0.0/8 (without 127.0.0.1 and the explicit addresses); "
                        f"{wanting} need one"
                    )
                self._fixed[slot] = spare
        self._slots = {address: slot for slot, address in self._fixed.items()}

    def _own_slot(self, address: str) -> int | None:
        return _slot_of(self._first, self._second, address)

    def address(self, slot: int) -> str:
        """The address of fleet position ``slot``."""
        fixed = self._fixed.get(slot)
        return fixed if fixed is not None else _slot_address(self._first, self._second, slot)

    def slot(self, address: str) -> int | None:
        """The fleet position whose address is ``address``, if any."""
        slot = self._slots.get(address)
        if slot is None:
            slot = self._own_slot(address)
            if slot is None or slot >= self._total or slot in self._fixed:
                return None
        return slot


def assign_addresses(prefix: str, explicit: Sequence[str | None], *, pool: int = POOL) -> list[str]:
    """The address of every VM, in fleet order; ``explicit[i]`` is VM i's own, if any
    (``AddressPlan`` as a list, for small fleets and tests)."""
    given = {i: a for i, a in enumerate(explicit) if a is not None}
    plan = AddressPlan(prefix, len(explicit), given, pool=pool)
    return [plan.address(i) for i in range(len(explicit))]


def _spares(
    first: int, second: int, total: int, explicit: list[int], reserved: set[str], pool: int
) -> Iterator[str]:
    """Free addresses for VMs whose own slot is reserved, in a fixed order: the slots after
    the fleet, then those of VMs with explicit addresses (``explicit``: their slots, in
    order)."""
    for slot in range(total, pool):
        address = _slot_address(first, second, slot)
        if address not in reserved:
            yield address
    for slot in explicit:
        if slot < pool:
            address = _slot_address(first, second, slot)
            if address not in reserved:
                yield address


class HostAssigner:
    """Hosts ``host-1`` … ``host-N``, round robin in fleet order.

    A host never carries two update domains of one scope, so maintaining one host never
    takes down more than one update domain of any scope. The next VM goes to the next host
    from the cursor that holds no VM of its scope or only VMs of its update domain; when no
    host of the pool qualifies, the pool grows by one (``hosts`` is a minimum).

    Finding that host is near O(1): a host that once failed a (scope, update domain) fails
    it for good (what a host holds never changes), so each such host is linked past once
    per (scope, update domain), with path compression, instead of being scanned again for
    every VM.
    """

    def __init__(self, count: int) -> None:
        self.count = count
        self._cursor = 0
        self._held: dict[str, dict[int, int]] = {}  # scope → host index → update domain
        self._skip: dict[tuple[str, int], dict[int, int]] = {}  # → index → next candidate
        self._names: list[str] = []

    def assign(self, scope_id: str, update_domain: int) -> str:
        """The host of the next VM of ``scope_id`` in ``update_domain``."""
        held = self._held.get(scope_id)
        if held is None:
            held = self._held[scope_id] = {}
        index = self._cursor
        other = held.get(index)
        if other is None:  # the usual case: the host at the cursor takes it
            held[index] = update_domain
        elif other != update_domain:
            index = self._elsewhere(held, scope_id, update_domain, index)
        self._cursor = (index + 1) % self.count
        names = self._names
        return names[index] if index < len(names) else self._name(index)

    def assign_run(self, scope_ids: Sequence[str], update_domains: int, count: int) -> array[int]:
        """The host indexes (``host-1`` is 0) of a scope entry's ``count`` VMs, VM ``i`` in
        ``scope_ids[i % len]`` and update domain ``i % update_domains``: ``assign`` for
        each in turn, without a string per VM, and mostly without a look-up per VM.

        While the cursor has not come back to a host holding a VM of the same scope in
        another update domain, VM ``i`` simply takes host ``cursor + i`` (mod the pool):
        it comes back to VM ``i``'s host after ``hosts`` VMs, to one of its scope after
        ``period`` (the first multiple of ``hosts`` that is one of the group count), in
        the same update domain if ``period`` is also one of ``update_domains`` (then
        never a clash). Only past the first clash are the VMs placed one by one.
        """
        hosts, start, groups = self.count, self._cursor, len(scope_ids)
        fresh = not any(self._held.get(scope_id) for scope_id in scope_ids)
        period = groups // gcd(hosts, groups) * hosts
        easy = (count if period % update_domains == 0 else min(count, period)) if fresh else 0
        out = array("I", range(start, min(hosts, start + easy)))
        while len(out) < easy:  # past the end of the pool: from host-1 again
            out.extend(range(min(hosts, easy - len(out))))
        if easy == count:
            self._cursor = (start + count) % hosts
            return out
        helds = [self._held.setdefault(scope_id, {}) for scope_id in scope_ids]
        for i, index in enumerate(out):  # what the easy part placed, as ``assign`` notes it
            helds[i % groups].setdefault(index, i % update_domains)
        out.extend(array("I", bytes(4 * (count - easy))))
        cursor = (start + easy) % hosts
        for i in range(easy, count):
            held = helds[i % groups]
            update_domain = i % update_domains
            other = held.get(cursor)
            if other is None:  # the usual case (as in ``assign``)
                held[cursor] = update_domain
            elif other != update_domain:
                cursor = self._elsewhere(held, scope_ids[i % groups], update_domain, cursor)
                hosts = self.count
            out[i] = cursor
            cursor += 1
            if cursor == hosts:
                cursor = 0
        self._cursor = cursor
        return out

    def _elsewhere(self, held: dict[int, int], scope_id: str, ud: int, index: int) -> int:
        """The host for (scope, ud) when the one at the cursor holds another update domain."""
        index = self._first_fit(held, scope_id, ud, index)
        if index >= self.count:  # nothing from the cursor to the end: wrap around
            index = self._first_fit(held, scope_id, ud, 0)
            if index >= self.count:  # no host qualifies: the pool grows
                index = self.count
                self.count += 1
        held.setdefault(index, ud)
        return index

    def name(self, index: int) -> str:
        """The name of host ``index`` (``host-1`` is 0)."""
        names = self._names
        return names[index] if index < len(names) else self._name(index)

    def place(self, host: str, scope_id: str, update_domain: int) -> None:
        """Record a VM given its host in the file, so automatic hosts avoid clashes."""
        index = _auto_index(host)
        if index is not None:
            self._held.setdefault(scope_id, {}).setdefault(index, update_domain)

    def _first_fit(self, held: dict[int, int], scope_id: str, ud: int, start: int) -> int:
        """The first host index >= ``start`` that may take (scope, ud); unbounded."""
        skip = self._skip.get((scope_id, ud))
        path: list[int] = []
        index = start
        while True:
            if skip is not None:
                ahead = skip.get(index)
                if ahead is not None:
                    path.append(index)
                    index = ahead
                    continue
            other = held.get(index)
            if other is None or other == ud:
                break
            if skip is None:
                skip = self._skip[(scope_id, ud)] = {}
            path.append(index)
            index += 1
        if skip is not None:
            for passed in path:
                skip[passed] = index
        return index

    def _name(self, index: int) -> str:
        names = self._names
        while len(names) <= index:
            names.append(f"host-{len(names) + 1}")
        return names[index]


def _auto_index(host: str) -> int | None:
    """The pool index of a host named like an automatic one (``host-7`` → 6)."""
    number = host[5:] if host.startswith("host-") else ""
    if number.isascii() and number.isdigit() and number[0] != "0":
        return int(number) - 1
    return None
