"""RFC 1123 dates, the only date format Scheduled Events puts on the wire."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

__all__ = ["format_rfc1123", "parse_not_before"]

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def format_rfc1123(epoch_seconds: float) -> str:
    """``Mon, 19 Sep 2016 18:29:47 GMT`` for a POSIX timestamp (fractions dropped)."""
    t = datetime.fromtimestamp(int(epoch_seconds), tz=UTC)
    return (
        f"{_DAYS[t.weekday()]}, {t.day:02d} {_MONTHS[t.month - 1]} {t.year:04d} "
        f"{t.hour:02d}:{t.minute:02d}:{t.second:02d} GMT"
    )


def parse_not_before(text: str) -> datetime | None:
    """Parse a NotBefore value leniently: RFC 1123, or ISO 8601 as some old docs showed.

    Returns None for the empty string (a Started event). Raises ValueError otherwise.
    """
    text = text.strip()
    if not text:
        return None
    try:
        parsed = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)
