"""Where a fleet's VMs answer and run: automatic loopback addresses and hosts.

Both are handed out in fleet order, the same way every time: a database stores its fleet
file, not the layout, so every restart (and every upgrade) must lay the fleet out exactly
as before. A 100,000-VM fleet is laid out on every start, so this uses plain integers and
dicts, O(VMs), no ``ipaddress`` objects and no scans that grow with the fleet.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Sequence

from forewarn.fleet.errors import FleetError

__all__ = [
    "BLOCK",
    "LOCALHOST",
    "POOL",
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


def assign_addresses(prefix: str, explicit: Sequence[str | None], *, pool: int = POOL) -> list[str]:
    """The address of every VM, in fleet order; ``explicit[i]`` is VM i's own, if any.

    VM i gets slot i of the pool (so the first 62,500 VMs keep the ``prefix.x.y``
    addresses of earlier versions, and VMs after an explicit one keep theirs). A slot
    whose address is reserved, 127.0.0.1 or any VM's explicit address, is never handed
    out: its VM gets a spare instead, first from the slots after the fleet, then from the
    slots VMs with explicit addresses left unused. ``pool`` is the number of slots (tests
    make it small to reach the end).
    """
    first, second = parse_prefix(prefix)
    reserved = {a for a in explicit if a is not None}
    reserved.add(LOCALHOST)
    out: list[str] = []
    needy: list[int] = []
    append = out.append
    block_end = 0
    head = ""
    for slot, given in enumerate(explicit):
        if given is not None:
            append(given)
            continue
        if slot >= pool:
            needy.append(slot)
            append("")
            continue
        if slot >= block_end:  # a new /16: its first two octets once per 62,500 VMs
            block = slot // BLOCK
            head = f"{first}.{(second + block) % 256}."
            block_end = (block + 1) * BLOCK
        rest = slot % BLOCK
        address = head + _OCTETS[rest // 250] + "." + _OCTETS[rest % 250 + 1]
        if address in reserved:
            needy.append(slot)
        append(address)
    if needy:
        spares = _spares(first, second, explicit, reserved, pool)
        for slot in needy:
            spare = next(spares, None)
            if spare is None:
                held = (_slot_of(first, second, a) for a in reserved)
                taken = sum(1 for index in held if index is not None and index < pool)
                wanting = sum(1 for a in explicit if a is None)
                raise FleetError(
                    f"at most {pool - taken} VMs get automatic addresses in {first}.0.0.0/8 "
                    f"(without 127.0.0.1 and the explicit addresses); {wanting} need one"
                )
            out[slot] = spare
    return out


def _spares(
    first: int, second: int, explicit: Sequence[str | None], reserved: set[str], pool: int
) -> Iterator[str]:
    """Free addresses for VMs whose own slot is reserved, in a fixed order."""
    for slot in range(len(explicit), pool):
        address = _slot_address(first, second, slot)
        if address not in reserved:
            yield address
    for slot, given in enumerate(explicit[:pool]):
        if given is not None:
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
            index = self._first_fit(held, scope_id, update_domain, index)
            if index >= self.count:  # nothing from the cursor to the end: wrap around
                index = self._first_fit(held, scope_id, update_domain, 0)
                if index >= self.count:  # no host qualifies: the pool grows
                    index = self.count
                    self.count += 1
            held.setdefault(index, update_domain)
        self._cursor = (index + 1) % self.count
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
