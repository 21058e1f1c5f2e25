"""Azure's documented limits of the metadata endpoint (the contract's R8).

The endpoint and ``forewarn serve`` take their defaults from here, so the number is
written once.
"""

from __future__ import annotations

__all__ = ["RATE_LIMIT"]

#: Requests per second per VM, across every metadata path, before a 429
#: ``TOO_MANY_REQUESTS``.
RATE_LIMIT = 5.0
