"""The fleet's VMs as a table: O(scopes) to build, each VM made the first time it is asked for.

A million-VM fleet is laid out on every start. Building a Python object, a name, an
address and three index entries for every VM made start-up cost grow faster than the fleet
(the indexes outgrow the caches), so the VMs a fleet file makes from a count (``vms:
500000``) are kept as *counted runs*: a name prefix and a count, their hosts in one compact
array, everything else arithmetic (the update domain of VM ``i`` is ``i % update_domains``,
its address is slot ``i`` of the pool). Looking one up parses its name (``big_123`` is VM
123 of the run named ``big_``) or its address (the pool's inverse); the VM itself is made
then, and kept, so the same VM is always the same object. VMs written out one by one in
the file (and any list of VMs handed to ``Topology``) are *given runs*, built as before.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, ItemsView, Iterator, Mapping, Sequence, ValuesView
from typing import TYPE_CHECKING, Any, TypeVar, overload

from forewarn.fleet.errors import FleetError
from forewarn.fleet.vm import VM

if TYPE_CHECKING:
    from forewarn.fleet.layout import AddressPlan

__all__ = ["CountedRun", "FleetRange", "GivenRun", "VmTable"]

_DIGITS = "0123456789"
T = TypeVar("T")


class GivenRun:
    """VMs built one by one, at fleet positions ``start`` on."""

    __slots__ = ("start", "vms")

    def __init__(self, start: int, vms: list[VM]) -> None:
        self.start = start
        self.vms = vms

    @property
    def count(self) -> int:
        return len(self.vms)


class CountedRun:
    """``count`` VMs named ``prefix0`` … at fleet positions ``start`` on: the ``base``-th
    VM of their scope entry onwards (a cloud service's roles share one entry)."""

    __slots__ = (
        "base", "count", "fault_domains", "hosts", "location", "prefix", "scale_set",
        "scope_ids", "spot", "start", "update_domains", "zones",
    )  # fmt: skip

    def __init__(
        self,
        *,
        start: int,
        count: int,
        base: int,
        prefix: str,
        scope_ids: Sequence[str],
        update_domains: int,
        fault_domains: int,
        zones: Sequence[str],
        spot: bool,
        scale_set: str,
        location: str,
        hosts: array[int],
    ) -> None:
        self.start, self.count, self.base, self.prefix = start, count, base, prefix
        self.scope_ids = tuple(scope_ids)
        self.update_domains, self.fault_domains = update_domains, fault_domains
        self.zones = tuple(zones)
        self.spot, self.scale_set, self.location = spot, scale_set, location
        self.hosts = hosts  # automatic host index (``host-{k + 1}``) of each VM


Run = GivenRun | CountedRun


def _number(digits: str) -> int | None:
    """The number a generated name ends with, if ``digits`` is one as ``str(n)`` writes it."""
    if not digits or (digits[0] == "0" and len(digits) > 1):
        return None
    return int(digits)


class VmTable(Mapping[str, "VM"]):
    """Name → VM for the whole fleet, in fleet order, without a Python object per VM until
    one is used. Also the fleet's address and port look-ups (``by_address``, ``by_port``)."""

    def __init__(
        self,
        runs: Sequence[Run],
        *,
        addresses: AddressPlan | None = None,
        port_base: int | None = None,
        check: bool = True,
    ) -> None:
        """``addresses`` and ``port_base``: how counted runs get theirs (required with any);
        ``check``: refuse a name, address or port used twice (only an error path skips it)."""
        self._runs = list(runs)
        self._starts = [run.start for run in self._runs]
        self._total = sum(run.count for run in self._runs)
        self._plan = addresses
        self._port_base = port_base
        self._made: dict[int, VM] = {}
        self._host_names: list[str] = []
        self._given: dict[str, int] = {}
        self._given_lower: dict[str, int] = {}
        self._given_address: dict[str, VM] = {}
        self._given_port: dict[int, VM] = {}
        self._prefixes: dict[str, CountedRun] = {}
        self._by_host: dict[str, list[int]] | None = None
        given = 0
        for run in self._runs:
            if isinstance(run, GivenRun):
                for offset, vm in enumerate(run.vms):
                    index = run.start + offset
                    self._made[index] = vm
                    self._given.setdefault(vm.name, index)
                    self._given_lower.setdefault(vm.name.lower(), index)
                    self._given_address.setdefault(vm.address, vm)
                    if vm.port is not None:
                        self._given_port.setdefault(vm.port, vm)
                given += run.count
            else:
                assert addresses is not None, "counted runs need an address plan"
                self._prefixes.setdefault(run.prefix.lower(), run)
        if check:
            self._check(given)

    @property
    def runs(self) -> Sequence[Run]:
        """The table's runs in fleet order (read only: a walk over the fleet reads them)."""
        return self._runs

    # -- checks -----------------------------------------------------------------------

    def _check(self, given: int) -> None:
        """Names (ignoring case), addresses and ports are the fleet's own, each once: cheap
        tests here; a clash found is named, in fleet order, by a scan of every VM."""
        counted = len(self._runs) - sum(isinstance(r, GivenRun) for r in self._runs)
        names_clash = (
            len(self._given_lower) != given
            or len(self._prefixes) != counted
            or any(self._counted_index(name.lower(), exact=False) is not None
                   for name in self._given_lower)
        )  # fmt: skip
        if names_clash:
            vm, _ = self._first_duplicate(lambda vm: vm.name.lower())
            raise FleetError(f"VM name {vm.name!r} is used twice (names are case-insensitive)")
        if len(self._given_address) != given:
            vm, other = self._first_duplicate(lambda vm: vm.address)
            raise FleetError(f"VMs {other.name!r} and {vm.name!r} share address {vm.address}")
        with_port = sum(
            1 for r in self._runs if isinstance(r, GivenRun) for v in r.vms if v.port is not None
        )
        port_clash = len(self._given_port) != with_port or any(
            self._counted_port(port) is not None for port in self._given_port
        )
        if port_clash:
            vm, other = self._first_duplicate(lambda vm: vm.port, skip_none=True)
            raise FleetError(f"VMs {other.name!r} and {vm.name!r} share port {vm.port}")

    def _first_duplicate(
        self, key: Callable[[VM], object], *, skip_none: bool = False
    ) -> tuple[VM, VM]:
        """The first VM whose key an earlier VM already has, and that earlier VM."""
        seen: dict[object, VM] = {}
        for vm in self.values():
            value = key(vm)
            if skip_none and value is None:
                continue
            other = seen.setdefault(value, vm)
            if other is not vm:
                return vm, other
        raise AssertionError("no duplicate")  # only called when a check found one

    # -- look-ups ---------------------------------------------------------------------

    def _counted_index(self, name: str, *, exact: bool) -> int | None:
        """The fleet position of a counted run's VM called ``name`` (lower-case unless
        ``exact``), if any: the trailing digits are its number, the rest its run's prefix
        (a prefix ends in ``_``, ``-`` or ``_IN_``, never in a digit)."""
        head = name.rstrip(_DIGITS)
        number = _number(name[len(head) :])
        if number is None:
            return None
        run = self._prefixes.get(head if not exact else head.lower())
        if run is None or number >= run.count or (exact and run.prefix != head):
            return None
        return run.start + number

    def index(self, name: str, *, exact: bool = True) -> int | None:
        """The fleet position of the VM called ``name`` (ignoring case unless ``exact``)."""
        found = self._given.get(name)
        if found is None:
            found = self._counted_index(name, exact=True)
        if found is None and not exact:
            lower = name.lower()
            found = self._given_lower.get(lower)
            if found is None:
                found = self._counted_index(lower, exact=False)
        return found

    def at(self, index: int) -> VM:
        """The VM at fleet position ``index``."""
        vm = self._made.get(index)
        if vm is None:
            run = self._runs[bisect_right(self._starts, index) - 1]
            assert isinstance(run, CountedRun)  # given runs' VMs are all made
            vm = self._made[index] = self._make(run, index)
        return vm

    def name_at(self, index: int) -> str:
        """The name of the VM at fleet position ``index`` (without making the VM)."""
        vm = self._made.get(index)
        if vm is not None:
            return vm.name
        run = self._runs[bisect_right(self._starts, index) - 1]
        assert isinstance(run, CountedRun)
        return f"{run.prefix}{index - run.start}"

    def _make(self, run: CountedRun, index: int) -> VM:
        assert self._plan is not None
        offset = index - run.start
        i = run.base + offset
        port_base = self._port_base
        return VM(
            name=f"{run.prefix}{offset}",
            scope_id=run.scope_ids[i % len(run.scope_ids)],
            host=self.host_name(run.hosts[offset]),
            address=self._plan.address(index),
            update_domain=i % run.update_domains,
            fault_domain=i % run.fault_domains,
            zone=run.zones[i % len(run.zones)],
            port=None if port_base is None else port_base + index,
            spot=run.spot,
            scale_set=run.scale_set,
            location=run.location,
        )

    def scope_at(self, index: int) -> str:
        """The scope id of the VM at fleet position ``index`` (without making the VM)."""
        vm = self._made.get(index)
        if vm is not None:
            return vm.scope_id
        run = self._runs[bisect_right(self._starts, index) - 1]
        assert isinstance(run, CountedRun)
        i = run.base + index - run.start
        return run.scope_ids[i % len(run.scope_ids)]

    def positions(self) -> Mapping[str, int]:
        """VM name → fleet position, read-only, without a dict of every VM."""
        return _Derived(self, lambda index: index)

    def scope_ids(self) -> Mapping[str, str]:
        """VM name → scope id, read-only, without a dict (or a VM object) of every VM."""
        return _Derived(self, self.scope_at)

    def host_name(self, index: int) -> str:
        """The automatic host ``index`` (``host-1`` is 0), one string per host."""
        names = self._host_names
        if index >= len(names):
            names.extend(f"host-{k + 1}" for k in range(len(names), index + 1))
        return names[index]

    def find(self, name: str) -> VM | None:
        """The VM called ``name``: exactly, else ignoring case."""
        index = self.index(name, exact=False)
        return None if index is None else self.at(index)

    def by_address(self, address: str) -> VM | None:
        """The VM whose address is ``address``, if any."""
        vm = self._given_address.get(address)
        if vm is None and self._plan is not None:
            index = self._plan.slot(address)
            if index is not None:
                vm = self.at(index)
        return vm

    def _counted_port(self, port: int) -> int | None:
        base = self._port_base
        if base is None or not 0 <= port - base < self._total:
            return None
        index = port - base
        run = self._runs[bisect_right(self._starts, index) - 1]
        return index if isinstance(run, CountedRun) else None

    def by_port(self, port: int) -> VM | None:
        """The VM with its own port ``port``, if any."""
        vm = self._given_port.get(port)
        if vm is None:
            index = self._counted_port(port)
            vm = None if index is None else self.at(index)
        return vm

    @property
    def has_ports(self) -> bool:
        """Whether any VM has a port of its own."""
        return bool(self._given_port) or (self._port_base is not None and self._total > 0)

    def host_index(self) -> dict[str, list[int]]:
        """Host → the fleet positions of its VMs, in fleet order (built on first use)."""
        if self._by_host is None:
            by_host: dict[str, list[int]] = {}
            for run in self._runs:
                if isinstance(run, GivenRun):
                    for offset, vm in enumerate(run.vms, run.start):
                        by_host.setdefault(vm.host, []).append(offset)
                    continue
                if run.hosts:
                    self.host_name(max(run.hosts))  # every host's name made, once
                names = self._host_names
                for index, host in enumerate(run.hosts, run.start):
                    on_host = by_host.get(names[host])
                    if on_host is None:
                        by_host[names[host]] = [index]
                    else:
                        on_host.append(index)
            self._by_host = by_host
        return self._by_host

    # -- Mapping ----------------------------------------------------------------------

    def __getitem__(self, name: str) -> VM:
        index = self.index(name)
        if index is None:
            raise KeyError(name)
        return self.at(index)

    def get(self, name: str, default: Any = None) -> Any:
        index = self.index(name)
        return default if index is None else self.at(index)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.index(name) is not None

    def __len__(self) -> int:
        return self._total

    def __iter__(self) -> Iterator[str]:
        for run in self._runs:
            if isinstance(run, GivenRun):
                for vm in run.vms:
                    yield vm.name
            else:
                prefix = run.prefix
                for offset in range(run.count):
                    yield f"{prefix}{offset}"

    def iter_vms(self) -> Iterator[VM]:
        """Every VM in fleet order (each made as it comes, if not yet)."""
        at = self.at
        for run in self._runs:
            if isinstance(run, GivenRun):
                yield from run.vms
            else:
                for index in range(run.start, run.start + run.count):
                    yield at(index)

    def values(self) -> ValuesView[VM]:
        return _Values(self)

    def items(self) -> ItemsView[str, VM]:
        return _Items(self)


class _Values(ValuesView["VM"]):
    _mapping: VmTable

    def __iter__(self) -> Iterator[VM]:
        return self._mapping.iter_vms()


class _Items(ItemsView[str, "VM"]):
    _mapping: VmTable

    def __iter__(self) -> Iterator[tuple[str, VM]]:
        return ((vm.name, vm) for vm in self._mapping.iter_vms())


class _Derived(Mapping[str, T]):
    """VM name → something of its fleet position, computed on each look-up."""

    __slots__ = ("_of", "_table")

    def __init__(self, table: VmTable, of: Callable[[int], T]) -> None:
        self._table = table
        self._of = of

    def __getitem__(self, name: str) -> T:
        index = self._table.index(name)
        if index is None:
            raise KeyError(name)
        return self._of(index)

    def get(self, name: str, default: Any = None) -> Any:
        index = self._table.index(name)
        return default if index is None else self._of(index)

    def __contains__(self, name: object) -> bool:
        return name in self._table

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)


class FleetRange(Sequence[str]):
    """A scope's VM names as fleet positions ``start``, ``start + step`` … before ``stop``
    (a placement group takes every ``step``-th VM of its scale set), named on demand."""

    __slots__ = ("_range", "_table")

    def __init__(self, table: VmTable, positions: range) -> None:
        self._table = table
        self._range = positions

    def __len__(self) -> int:
        return len(self._range)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if isinstance(index, slice):
            return FleetRange(self._table, self._range[index])
        return self._table.name_at(self._range[index])

    def __iter__(self) -> Iterator[str]:
        name_at = self._table.name_at
        return (name_at(index) for index in self._range)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        index = self._table.index(name)
        return index is not None and index in self._range

    def __eq__(self, other: object) -> bool:
        # The same names are equal whichever table names them (a restart builds another).
        if isinstance(other, FleetRange) and self._table is other._table:
            return self._range == other._range
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        # What any equal sequence of names shares, without naming every VM.
        return hash((len(self), self[0], self[-1]) if len(self) else 0)

    def __repr__(self) -> str:
        shown = ", ".join(repr(n) for n in self[:3])
        more = f", … ({len(self)} VMs)" if len(self) > 3 else ""
        return f"FleetRange([{shown}{more}])"
