"""A poll sent again byte for byte, answered without the parser, on any connection.

A VM polls the same bytes every second from the same address: on one kept-alive
connection, or on a new connection each time (``Connection: close``). So what was seen is
kept per client address and local port (the two that pick the VM), for every connection of
the server: once a read that held exactly one plain GET has come twice from there, the
endpoint gives a ticket for it (``Repeater``). From then on the same bytes from there, on
whatever connection, are answered from the ticket, every rule applied as for a parsed
request, and the encoder's bytes of the answer are sent (one object for every connection
answered with the same document in the same second: ``framing.Encoder``). The bytes say
whether the connection closes after the answer (``Connection: close``, HTTP/1.0), so that
is kept with them.

Bounded: at most ``PER_ADDRESS`` distinct requests per address and port (a VM sends one
or two); the books themselves are kept with each address's record (``peers.py``).
"""

from __future__ import annotations

from forewarn.imds.framing import Encoder
from forewarn.imds.messages import Repeater, Reply, Request, Ticket

__all__ = ["PER_ADDRESS", "Book", "Repeat", "Repeats"]

PER_ADDRESS = 4


class Repeat:
    """A request seen from one address: whether it asks to close, and once it came twice,
    the endpoint's ticket for it."""

    __slots__ = ("close", "raw", "ticket")

    def __init__(self, raw: bytes, close: bool) -> None:
        self.raw = raw
        self.close = close
        self.ticket: Ticket | None = None


class _ParsedOnly:
    """An endpoint that answers only parsed requests (never asked: no book is kept)."""

    def ticket(self, request: Request) -> Ticket | None:
        return None

    def again(self, ticket: Ticket) -> Reply | None:
        return None


#: The requests seen from one address and port, by their exact bytes.
Book = dict[bytes, Repeat]


class Repeats:
    """The repeated polls of one server's connections, per client address and local port."""

    __slots__ = ("_answers", "_encoder", "_repeater")

    def __init__(self, repeater: Repeater | None, encoder: Encoder) -> None:
        """``repeater`` is the endpoint (None: one that answers only parsed requests)."""
        self._answers = repeater is not None
        self._repeater: Repeater = repeater or _ParsedOnly()
        self._encoder = encoder

    def new_book(self, books: dict[int | None, Book], local_port: int | None) -> Book | None:
        """A book for what an address sends to ``local_port``, kept in ``books`` (its
        record's); None: the endpoint answers only parsed requests, nothing is kept."""
        if not self._answers:
            return None
        book = books[local_port] = {}
        return book

    def answered(self, book: Book, data: bytes, request: Request, close: bool) -> None:
        """``data`` was one whole request, just answered: when it is a plain GET seen
        before, ask the endpoint for a ticket to answer it unparsed from now on."""
        if request.method != "GET":
            return  # (the same bytes are the same method: never in the book)
        repeat = book.get(data)
        if repeat is None:
            if len(book) >= PER_ADDRESS:
                book.clear()
            book[data] = Repeat(data, close)  # seen once: parsed again next time
            return
        repeat.ticket = ticket = self._repeater.ticket(request)
        if ticket is None:
            del book[data]  # seen once again next time, as after any other request

    def again(self, repeat: Repeat, ticket: Ticket) -> bytes | Reply | None:
        """The answer to ``repeat`` (``ticket`` is its ticket): the bytes to write, or a
        Reply that must wait (``Reply.delay``, ``Reply.wait``); None: parse it after all."""
        reply = self._repeater.again(ticket)
        if reply is None:
            return None
        if reply.wait is not None or reply.delay > 0:
            return reply
        # The encoder's bytes of this reply for this second: the same object for every
        # connection answered with it meanwhile (``framing.Encoder``).
        return self._encoder.encode(reply, repeat.close)
