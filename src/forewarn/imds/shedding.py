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
from collections.abc import Iterable, Set
from typing import Protocol, TypeVar

__all__ = [
    "HEADROOM_SHARE",
    "MIN_HEADROOM",
    "Ranked",
    "Room",
    "Sheddable",
    "fd_threshold",
    "headroom",
    "lowest_ranked",
    "soft_open_files",
]

log = logging.getLogger(__name__)

#: Descriptors kept free: an eighth of the limit, at least ``MIN_HEADROOM`` (the rest of
#: the process, the database and the control API, needs some too).
HEADROOM_SHARE = 8
MIN_HEADROOM = 16
LOG_INTERVAL = 60.0
MAX_BATCH = 64


class Ranked(Protocol):
    """A connection that may be closed to make room (here, or on the API listeners)."""

    def shed_rank(self) -> tuple[int, float] | None:
        """Lowest is closed first; None: never (its request is being answered, or it is
        closing)."""
        ...


class Sheddable(Ranked, Protocol):
    """A connection the endpoint may close to make room."""

    def close(self) -> None: ...


R = TypeVar("R", bound=Ranked)


def lowest_ranked(among: Iterable[R], newcomer: object, count: int) -> list[R]:
    """The ``count`` connections of ``among`` to close first (lowest ``shed_rank``, the
    first met on a tie), never ``newcomer`` nor one ranked None."""
    ranked = (
        (rank, i, connection)
        for i, connection in enumerate(among)
        if connection is not newcomer and (rank := connection.shed_rank()) is not None
    )
    return [c for _, _, c in heapq.nsmallest(count, ranked, key=lambda e: (e[0], e[1]))]


def soft_open_files() -> int | None:
    """The soft RLIMIT_NOFILE now in force (None: no limit)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= sys.maxsize:
        return None
    return soft


def headroom(limit: int) -> int:
    """Descriptors of ``limit`` kept for what is not a connection."""
    return max(MIN_HEADROOM, limit // HEADROOM_SHARE)


def fd_threshold(soft_limit: int | None = None) -> int:
    """The first descriptor number at which connections are shed (for the soft
    RLIMIT_NOFILE now in force unless ``soft_limit`` is given)."""
    if soft_limit is None:
        soft_limit = soft_open_files()
    if soft_limit is None or soft_limit >= sys.maxsize:
        return sys.maxsize
    return max(1, soft_limit - headroom(soft_limit))


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
        victims = lowest_ranked(self._live, newcomer, fd - self.threshold + 1 + self.batch)
        for connection in victims:
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
