"""Each VM's last request, noted with one dictionary store a poll.

The fabric notes every VM's request time twice over: as its last request (the reaction
tracker's "last poll", the dashboard's, the rehearsal report's), and among the VMs that
asked since the tracker last took them (what it writes next, ``Fabric.take_polled``).
At 10,000 VMs polling once a second, a second store a poll into a second table of 10,000
costs a cache miss or two each time; so the requests since the last take are the only
table written per poll, and they are merged into the earlier ones when taken (one pass
in C every few seconds, not 10,000 stores a second in Python). Reading gives the newest
of the two, as one table would.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

__all__ = ["LastRequests"]


class LastRequests(Mapping[str, float]):
    """VM name → the time of its last request (read only, but for ``fresh`` and ``take``)."""

    __slots__ = ("_earlier", "fresh")

    def __init__(self) -> None:
        #: The requests since the last ``take``: the one table written per request.
        self.fresh: dict[str, float] = {}
        self._earlier: dict[str, float] = {}

    def take(self) -> dict[str, float]:
        """The requests since the last take (the caller owns the dict), merged first into
        the earlier ones."""
        fresh, self.fresh = self.fresh, {}
        self._earlier.update(fresh)
        return fresh

    def copy(self) -> dict[str, float]:
        """Every VM's last request, as a plain dict (in the order of their first)."""
        return {**self._earlier, **self.fresh}

    def get(self, vm: str, default: float | None = None) -> float | None:  # type: ignore[override]
        last = self.fresh.get(vm)
        return self._earlier.get(vm, default) if last is None else last

    def __getitem__(self, vm: str) -> float:
        last = self.fresh.get(vm)
        return self._earlier[vm] if last is None else last

    def __contains__(self, vm: object) -> bool:
        return vm in self.fresh or vm in self._earlier

    def __iter__(self) -> Iterator[str]:
        return iter(self.copy())

    def __len__(self) -> int:
        return len(self._earlier.keys() | self.fresh.keys())
