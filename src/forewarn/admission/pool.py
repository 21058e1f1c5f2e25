"""The API listeners' connections: a share of the descriptors, and a cap per address.

A new connection over either bound makes room rather than being refused while it can: the
pool closes the connections that have been inside a handshake or a request head (or body)
the longest, nearest their deadline first, then those idle the longest, never one whose
request is being handled (a dashboard stream, an operation under way). A client that
opens connections and says nothing (or trickles) thus loses its oldest ones to whoever
comes next, and a person's ``curl`` from the same loopback address still gets through.
Only when every connection in the way is busy is the newcomer closed.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from typing import Protocol

from forewarn.imds.shedding import Ranked, lowest_ranked

__all__ = ["DEFAULT_PER_ADDRESS", "LOG_INTERVAL", "Member", "Pool"]

log = logging.getLogger(__name__)

#: Connections per client address unless configured (never more than half the pool).
DEFAULT_PER_ADDRESS = 1024
LOG_INTERVAL = 60.0
MAX_BATCH = 64


class Member(Ranked, Protocol):
    """A connection of the pool (ranked as the endpoint's are: ``imds/shedding.py``)."""

    address: str | None

    def shed(self) -> None:
        """Close now, to make room; leaves the pool at once."""
        ...


class Pool:
    """The open connections of the API listeners, within ``capacity`` and per address."""

    def __init__(self, capacity: int, per_address: int = DEFAULT_PER_ADDRESS) -> None:
        if capacity < 1 or per_address < 1:
            raise ValueError("a pool holds at least one connection, one per address")
        self.capacity = capacity
        self.per_address = max(1, min(per_address, capacity // 2))
        #: Closed beyond the one needed when the pool is full, so that a burst of new
        #: connections does not scan every open one for each.
        self.batch = min(MAX_BATCH, max(1, capacity // 32))
        self.live: set[Member] = set()
        self._by_address: dict[str | None, set[Member]] = {}
        self.shed_count = 0
        self.refused = 0
        self._last_log = -math.inf

    def admit(self, member: Member, now: float) -> bool:
        """Take ``member`` in (making room as need be); False: it must be closed."""
        address = member.address
        mates = self._by_address.get(address)
        crowded = mates is not None and address is not None and len(mates) >= self.per_address
        if crowded and mates is not None and not self._shed(mates, member, 1):
            return self._refuse(member, now, f"{len(mates)} open from {address} (cap)")
        if len(self.live) >= self.capacity:
            if not self._shed(self.live, member, self.batch):
                return self._refuse(member, now, f"{len(self.live)} open (the API's share)")
            self._log(now, f"{len(self.live)} of {self.capacity} API connections open")
        self.live.add(member)
        if mates is None:
            mates = self._by_address[address] = set()
        mates.add(member)
        return True

    def release(self, member: Member) -> None:
        """``member`` is closed (a second call does nothing)."""
        if member not in self.live:
            return
        self.live.discard(member)
        mates = self._by_address.get(member.address)
        if mates is not None:
            mates.discard(member)
            if not mates:
                del self._by_address[member.address]

    def _shed(self, among: Iterable[Member], newcomer: Member, count: int) -> int:
        victims = lowest_ranked(among, newcomer, count)
        for member in victims:
            member.shed()
            self.release(member)
        self.shed_count += len(victims)
        return len(victims)

    def _refuse(self, member: Member, now: float, why: str) -> bool:
        self.refused += 1
        self._log(now, f"refused a connection from {member.address}: {why}, all busy")
        return False

    def _log(self, now: float, what: str) -> None:
        if now - self._last_log >= LOG_INTERVAL:
            self._last_log = now
            log.warning(
                "%s: closed %d slow or idle API connections so far, refused %d",
                what,
                self.shed_count,
                self.refused,
            )
