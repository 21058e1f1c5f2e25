"""A poll a connection sends again byte for byte, answered without the parser.

A VM polls the same bytes on the same connection every second. Once a read that held
exactly one plain GET has come twice, the endpoint gives a ticket for it (``Repeater``):
from then on the same bytes are answered from the ticket, every rule applied as for a
parsed request, and the bytes of the last answer are sent again while the document and
the second of its Date line are the same.
"""

from __future__ import annotations

from forewarn.imds.framing import DateHeader, Encoder
from forewarn.imds.messages import Repeater, Reply, Request, Ticket

__all__ = ["Repeats"]


class Repeats:
    """One connection's repeated poll: its bytes, the endpoint's ticket, the last answer."""

    __slots__ = ("_date", "_encoder", "_repeater", "_sent", "_ticket", "raw")

    def __init__(self, repeater: Repeater | None, encoder: Encoder, date: DateHeader) -> None:
        """``repeater`` is the endpoint (None: one that answers only parsed requests)."""
        self._repeater = repeater
        self._encoder = encoder
        self._date = date
        #: A read that held exactly one plain request (the connection compares reads to it).
        self.raw = b""
        self._ticket: Ticket | None = None  # the endpoint's ticket for ``raw``, once repeated
        self._sent: tuple[Reply, bytes, bytes] | None = None  # reply, date line, bytes sent

    def answered(self, data: bytes, request: Request) -> None:
        """``data`` was one whole plain request, just answered: when it came before, ask
        the endpoint for a ticket to answer it unparsed from now on."""
        if self._repeater is None or request.method != "GET":
            self.raw = b""
        elif data != self.raw:
            self.raw, self._ticket = data, None  # seen once: parsed again next time
        else:
            self._ticket = self._repeater.ticket(request)
            if self._ticket is None:
                self.raw = b""

    def forget(self) -> None:
        """The last read was not one plain request: the next is parsed, whatever it is."""
        self.raw = b""

    def again(self) -> bytes | Reply | None:
        """The answer to ``raw`` sent again: the bytes to write, or a Reply that must wait
        (``Reply.delay``, ``Reply.wait``); None: parse it after all."""
        ticket = self._ticket
        if ticket is None or self._repeater is None:
            return None
        reply = self._repeater.again(ticket)
        if reply is None:
            return None
        if reply.wait is not None or reply.delay > 0:
            return reply
        date = self._date.line()
        sent = self._sent
        if sent is not None and sent[0] is reply and sent[1] is date:
            return sent[2]  # the very bytes sent last time (same document, same second)
        data = self._encoder.encode(reply, False)
        self._sent = (reply, date, data)
        return data
