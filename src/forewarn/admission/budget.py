"""One open-file budget for every listener of the process.

Every connection of every listener takes a descriptor from the same table: without shares,
300 idle connections to the ARM port took all 256 and the VMs were refused. So the limit is
split three ways. The headroom the metadata endpoint has always kept for the rest of the
process (the database, logs, pipes, a PostgreSQL pool: ``imds/shedding.py``) stays; the API
listeners (control API and ARM together) may hold ``api_connections``, counted
(``pool.py``); the metadata endpoint has the rest: it sheds its own connections once a new
one's descriptor reaches ``endpoint_threshold``, which lies below the other two shares. No
API client can take the endpoint's share, and the endpoint never takes the API's.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from forewarn.imds.shedding import MIN_HEADROOM, fd_threshold, headroom, soft_open_files

__all__ = ["API_SHARE", "Budget"]

#: The API listeners may hold an eighth of the limit, at least ``MIN_HEADROOM`` connections.
API_SHARE = 8


@dataclass(frozen=True, slots=True)
class Budget:
    """The shares of an open-file limit (None: no limit)."""

    limit: int | None

    @classmethod
    def of_process(cls) -> Budget:
        """The shares of the soft RLIMIT_NOFILE in force now."""
        return cls(soft_open_files())

    @property
    def headroom(self) -> int:
        """Descriptors kept for what is not a connection."""
        return 0 if self.limit is None else headroom(self.limit)

    @property
    def api_connections(self) -> int:
        """Connections the control API and ARM may hold together."""
        if self.limit is None:
            return sys.maxsize
        return max(MIN_HEADROOM, self.limit // API_SHARE)

    @property
    def endpoint_threshold(self) -> int:
        """The first descriptor number at which the metadata endpoint sheds connections:
        its own threshold (``fd_threshold``), lowered by the API listeners' share."""
        if self.limit is None:
            return sys.maxsize
        return max(1, fd_threshold(self.limit) - self.api_connections)
