"""Lingering close: the bounds on what a listener reads of a body it has refused.

A listener that refuses a request before reading its body (413, or any answer sent while
the body is still coming) and then closes at once resets a connection whose client is
still writing: the client's write fails (``BrokenPipeError``, ``SSLEOFError``) before it
reads a byte of the answer, as urllib and most scripts do (they send the whole body first).
So after such a refusal every listener keeps reading, and discarding, what the client
sends, and closes once the body is over (or the client closes), as nginx's lingering close
does (``lingering_time`` / ``lingering_timeout``). It does so within bounds: at most
``LINGER_BYTES`` of the body after the refusal (a declared length past it is closed at
once), ``LINGER_TIME`` seconds in all and ``LINGER_TIMEOUT`` seconds without a byte.
The metadata endpoint (``connection.py``) and the API listeners (``admission/guard.py``)
both linger by these rules.
"""

from __future__ import annotations

__all__ = ["LINGER_BYTES", "LINGER_TIME", "LINGER_TIMEOUT", "Linger"]

#: Bytes of a refused body read (and discarded) after the refusal, at most.
LINGER_BYTES = 8 * 1024 * 1024
#: Seconds from the refusal to the close, at most.
LINGER_TIME = 10.0
#: Seconds without a byte from the client before the close.
LINGER_TIMEOUT = 2.0


class Linger:
    """One refused connection's lingering: what it may still read, and until when."""

    __slots__ = ("_last", "_left", "_until")

    def __init__(self, now: float) -> None:
        self._until = now + LINGER_TIME
        self._last = now
        self._left = LINGER_BYTES

    @staticmethod
    def worth(coming: int | None) -> bool:
        """Whether to linger for a body of which ``coming`` bytes are still due (None:
        unknown, chunked): past ``LINGER_BYTES`` the connection is closed at once."""
        return coming is None or coming <= LINGER_BYTES

    def took(self, size: int, now: float) -> bool:
        """``size`` more bytes were read at ``now``; False: past the bound, close now."""
        self._left -= size
        self._last = now
        return self._left >= 0

    def deadline(self) -> float:
        """When to close if nothing more comes (the loop's time)."""
        return min(self._until, self._last + LINGER_TIMEOUT)
