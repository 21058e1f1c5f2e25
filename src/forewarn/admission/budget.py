"""One open-file budget for every listener of the process.

Every connection of every listener takes a descriptor from the same table: without shares,
300 idle connections to the ARM port took all 256 and the VMs were refused. So the limit is
split three ways. ``headroom`` is kept for the rest of the process (the database, logs,
pipes, a PostgreSQL pool); the API listeners (control API and ARM together) may hold
``api_connections``, counted (``pool.py``); the metadata endpoint has the rest: it sheds its
own connections once a new one's descriptor reaches ``endpoint_threshold``
(``imds/shedding.py``), which lies below the other two shares. No API client can take the
endpoint's share, and the endpoint never takes the API's.
"""

from __future__ import annotations

import resource
import sys
from dataclasses import dataclass

__all__ = ["API_SHARE", "HEADROOM_SHARE", "MIN_SHARE", "Budget"]

#: The rest of the process keeps an eighth of the limit, the API listeners another eighth;
#: each at least ``MIN_SHARE`` descriptors.
HEADROOM_SHARE = 8
API_SHARE = 8
MIN_SHARE = 16


@dataclass(frozen=True, slots=True)
class Budget:
    """The shares of an open-file limit (None: no limit)."""

    limit: int | None

    @classmethod
    def of_process(cls) -> Budget:
        """The shares of the soft RLIMIT_NOFILE in force now."""
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY or soft >= sys.maxsize:
            return cls(None)
        return cls(soft)

    @property
    def headroom(self) -> int:
        """Descriptors kept for what is not a connection."""
        if self.limit is None:
            return 0
        return max(MIN_SHARE, self.limit // HEADROOM_SHARE)

    @property
    def api_connections(self) -> int:
        """Connections the control API and ARM may hold together."""
        if self.limit is None:
            return sys.maxsize
        return max(MIN_SHARE, self.limit // API_SHARE)

    @property
    def endpoint_threshold(self) -> int:
        """The first descriptor number at which the metadata endpoint sheds connections."""
        if self.limit is None:
            return sys.maxsize
        return max(1, self.limit - self.headroom - self.api_connections)
