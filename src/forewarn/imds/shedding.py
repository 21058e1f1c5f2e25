"""Room for new VMs when file descriptors run short: shed the connections least like a VM's.

A per-address cap cannot stop a client that holds one slow connection from each of many
addresses: once every descriptor is taken, the loop can accept nobody, and every VM is
refused until the slow connections time out. So the endpoint keeps ``headroom``
descriptors free. Descriptors are handed out lowest first, so an accepted socket numbered
``n`` means every descriptor below ``n`` is open: no count to keep, one comparison per
new connection (and no system call to ask a socket's number while fewer than half as many
connections are open). When a new socket's number reaches the threshold, the endpoint
closes the connections that have been inside a request the longest (slow heads and bodies,
nearest their deadline first), then those idle the longest. A VM connects, asks and is
answered within milliseconds and polls again within seconds, so it is rarely either; a
slow-connection attacker is both.
"""

from __future__ import annotations

import heapq
import logging
import math
import resource
import sys
from collections.abc import Set
from typing import Protocol

__all__ = ["HEADROOM_SHARE", "MIN_HEADROOM", "Room", "Sheddable", "fd_threshold"]

log = logging.getLogger(__name__)

#: Descriptors kept free: an eighth of the limit, at least ``MIN_HEADROOM`` (the rest of
#: the process, the database and the control API, needs some too).
HEADROOM_SHARE = 8
MIN_HEADROOM = 16
LOG_INTERVAL = 60.0
MAX_BATCH = 64


class Sheddable(Protocol):
    """A connection the endpoint may close to make room."""

    def shed_rank(self) -> tuple[int, float] | None:
        """Lowest is closed first; None: never (a reply is held for it, or it is closing)."""
        ...

    def close(self) -> None: ...


def fd_threshold(soft_limit: int | None = None) -> int:
    """The first descriptor number at which connections are shed (for the soft
    RLIMIT_NOFILE now in force unless ``soft_limit`` is given)."""
    if soft_limit is None:
        soft_limit, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft_limit == resource.RLIM_INFINITY or soft_limit >= sys.maxsize:
        return sys.maxsize
    return max(1, soft_limit - max(MIN_HEADROOM, soft_limit // HEADROOM_SHARE))


class Room:
    """Sheds connections of ``live`` when a new one's descriptor is ``threshold`` or more."""

    def __init__(self, live: Set[Sheddable], threshold: int) -> None:
        self._live = live
        self.threshold = threshold
        #: Open connections from which a new one's descriptor is looked at. Asking for it
        #: costs a system call per connection, and a descriptor can reach the threshold only
        #: once as many are open (the lowest free one is handed out): below half of it in
        #: connections, the rest of the process would need the other half.
        self.watch_from = threshold // 2
        #: Closed beyond the descriptors over the threshold, so that a burst of new
        #: connections does not scan the live ones for each.
        self.batch = min(MAX_BATCH, max(1, threshold // 32))
        self.shed = 0
        self._last_log = -math.inf

    def make(self, newcomer: Sheddable, fd: int, now: float) -> int:
        """Close connections to free ``fd - threshold + 1 + batch`` descriptors (never
        ``newcomer``); returns how many were closed."""
        want = fd - self.threshold + 1 + self.batch
        ranked = (
            (rank, i, connection)
            for i, connection in enumerate(self._live)
            if connection is not newcomer and (rank := connection.shed_rank()) is not None
        )
        victims = heapq.nsmallest(want, ranked, key=lambda entry: (entry[0], entry[1]))
        for _, _, connection in victims:
            connection.close()
        self.shed += len(victims)
        if now - self._last_log >= LOG_INTERVAL:
            self._last_log = now
            log.warning(
                "file descriptors run short (descriptor %d, room kept from %d): closed %d "
                "slow or idle connections for new VMs; %d so far",
                fd,
                self.threshold,
                len(victims),
                self.shed,
            )
        return len(victims)
