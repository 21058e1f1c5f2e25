"""What the connections of one endpoint server share: the endpoint, the framing, the
limits, and the registries the server's timer and its shedding look at."""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass, field
from typing import Protocol

from forewarn.imds.framing import DateHeader, Encoder
from forewarn.imds.messages import Handler, Reply
from forewarn.imds.peers import Peers
from forewarn.imds.repeats import Repeats
from forewarn.imds.shedding import Room, Sheddable

__all__ = ["REFUSAL_LOG_INTERVAL", "Expiring", "Live", "Shared"]

log = logging.getLogger(__name__)

REFUSAL_LOG_INTERVAL = 60.0


class Live(Sheddable, Protocol):
    """An open connection: the server's sweep closes it when idle, or at shutdown (a
    protocol, so that this module need not import the connection that imports it)."""

    def close_if_idle(self, now: float) -> None:
        """Close the connection if it has been silent too long."""
        ...


class Expiring(Protocol):
    """A connection inside a request: the server's timer looks at its deadline."""

    def expire_if_late(self, now: float) -> None:
        """408 and close when the request's deadline passed while it was being read."""
        ...


@dataclass(eq=False, slots=True)
class Shared:
    """What the connections of one server share: the endpoint, framing, limits, registries."""

    endpoint: Handler
    #: Polls sent again byte for byte, answered unparsed (``repeats.py``).
    repeats: Repeats
    encoder: Encoder
    date: DateHeader
    loop: asyncio.AbstractEventLoop
    header_timeout: float
    body_timeout: float
    per_address_cap: int
    live: set[Live] = field(default_factory=set)
    #: Connections inside a request (or not yet past their first): their deadline runs.
    deadlines: set[Expiring] = field(default_factory=set)
    #: Per client address: open connections (the cap's count) and what it sent before.
    peers: Peers = field(default_factory=Peers)
    #: Deferred replies in progress (a strong reference keeps their tasks alive).
    waits: set[asyncio.Future[Reply]] = field(default_factory=set)
    refusals: int = 0
    last_refusal_log: float = -math.inf
    #: Sheds slow and idle connections when descriptors run short (None: never).
    room: Room | None = None

    def refused(self, address: str) -> None:
        """Log refusals over the per-address cap, at most once a minute."""
        self.refusals += 1
        now = self.loop.time()
        if now - self.last_refusal_log >= REFUSAL_LOG_INTERVAL:
            self.last_refusal_log = now
            log.warning(
                "refusing connections from %s: %d already open (cap); %d refused so far",
                address,
                self.per_address_cap,
                self.refusals,
            )
