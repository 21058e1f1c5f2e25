"""What the endpoint's server keeps per client address: its open connections and what it
sent before.

A connection looks its address up once, when it is made, and holds the record: the
per-address cap's count goes up there and down again when the connection ends, with no
second lookup, and the books of polls the address sent before (``repeats.py``, one per
local port) are there for its first read. A VM that opens a connection per poll
(``Connection: close``) pays one dictionary lookup for all of that.

Bounded: once ``ADDRESSES`` addresses are known, the next new one makes the table forget
every address with no connection open (and what it sent before); connections keep what
they hold.
"""

from __future__ import annotations

from forewarn.imds.repeats import Book

__all__ = ["ADDRESSES", "Peer", "Peers"]

ADDRESSES = 1 << 17


class Peer:
    """One client address: how many connections it has open, and its books by local port."""

    __slots__ = ("books", "open")

    def __init__(self) -> None:
        self.open = 0
        self.books: dict[int | None, Book] = {}


class Peers(dict[str | None, Peer]):
    """Every known client address's record; ``peers[address]`` makes one if need be."""

    def __missing__(self, address: str | None) -> Peer:
        if len(self) >= ADDRESSES:
            for idle in [known for known, peer in self.items() if peer.open == 0]:
                del self[idle]
        peer = self[address] = Peer()
        return peer
