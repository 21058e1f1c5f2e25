"""RFC 1123 dates, the only date format Scheduled Events puts on the wire.

Read as ``email.utils.parsedate_to_datetime`` reads them, rule for rule, without importing
the email package (~15 ms of every VM command's start-up): tests/contract/test_timefmt.py
holds the two equal.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

__all__ = ["format_rfc1123", "parse_not_before"]

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

#: What the email package reads (``email._parseaddr``): month names short and long, day
#: names, and the zones RFC 822 names (offsets as +hhmm numbers).
_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                "dec", "january", "february", "march", "april", "may", "june", "july",
                "august", "september", "october", "november", "december")  # fmt: skip
_DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_ZONES = {"UT": 0, "UTC": 0, "GMT": 0, "Z": 0, "AST": -400, "ADT": -300, "EST": -500,
          "EDT": -400, "CST": -600, "CDT": -500, "MST": -700, "MDT": -600, "PST": -800,
          "PDT": -700}  # fmt: skip


def format_rfc1123(epoch_seconds: float) -> str:
    """``Mon, 19 Sep 2016 18:29:47 GMT`` for a POSIX timestamp (fractions dropped)."""
    t = datetime.fromtimestamp(int(epoch_seconds), tz=UTC)
    return (
        f"{_DAYS[t.weekday()]}, {t.day:02d} {_MONTHS[t.month - 1]} {t.year:04d} "
        f"{t.hour:02d}:{t.minute:02d}:{t.second:02d} GMT"
    )


def _fields(text: str) -> list[str] | None:
    """Day, month, year, time and zone, in that order, or None (``_parsedate_tz``'s first
    half: an optional day name, RFC 850's ``19-Sep-16``, a zone stuck to the time)."""
    data = text.split()
    if not data:
        return None
    if data[0].endswith(",") or data[0].lower() in _DAY_NAMES:
        del data[0]  # the day's name
    else:
        comma = data[0].rfind(",")
        if comma >= 0:
            data[0] = data[0][comma + 1 :]
    if len(data) == 3:  # RFC 850
        parts = data[0].split("-")
        if len(parts) == 3:
            data = parts + data[1:]
    if len(data) == 4:
        last = data[3]
        sign = last.find("+")
        if sign == -1:
            sign = last.find("-")
        if sign > 0:
            data[3:] = [last[:sign], last[sign:]]
        else:
            data.append("")  # no zone
    return data[:5] if len(data) >= 5 else None


def _zone_seconds(zone: str) -> int | None:
    """The zone's offset in seconds; None for -0000 or a zone not known (local time)."""
    zone = zone.upper()
    if zone in _ZONES:
        offset: int | None = _ZONES[zone]
    else:
        try:
            offset = int(zone)
        except ValueError:
            offset = None
        if offset == 0 and zone.startswith("-"):
            offset = None
    if not offset:
        return offset
    sign = -1 if offset < 0 else 1
    offset = abs(offset)
    return sign * ((offset // 100) * 3600 + (offset % 100) * 60)


def _rfc2822(text: str) -> datetime | None:
    """``email.utils.parsedate_to_datetime(text)``, or None where it raises ValueError:
    aware with the zone's offset, naive when the zone is -0000 or unknown."""
    data = _fields(text)
    if data is None:
        return None
    day, month, year, clock, zone = data
    if not (day and month and year):
        return None
    month = month.lower()
    if month not in _MONTH_NAMES:
        day, month = month, day.lower()
        if month not in _MONTH_NAMES:
            return None
    number = (_MONTH_NAMES.index(month) % 12) + 1
    if day[-1] == ",":
        day = day[:-1]
    if year.find(":") > 0:
        year, clock = clock, year
    if year[-1] == ",":
        year = year[:-1]
        if not year:
            return None
    if not year[0].isdigit():
        year, zone = zone, year
    if clock[-1] == ",":
        clock = clock[:-1]
    parts = clock.split(":")
    if len(parts) == 1 and "." in parts[0]:  # some mailers write 18.29.47
        parts = parts[0].split(".")
    if len(parts) == 2:
        parts.append("0")
    if len(parts) != 3:
        return None
    try:
        y, d, hh, mm, ss = int(year), int(day), int(parts[0]), int(parts[1]), int(parts[2])
    except ValueError:
        return None
    if y < 100:  # two digits: 1969-1999 or 2000-2068, as POSIX says
        y += 1900 if y > 68 else 2000
    offset = _zone_seconds(zone)
    try:
        tz = None if offset is None else timezone(timedelta(seconds=offset))
        return datetime(y, number, d, hh, mm, ss, tzinfo=tz)
    except (ValueError, OverflowError):
        return None


def parse_not_before(text: str) -> datetime | None:
    """Parse a NotBefore value leniently: RFC 1123, or ISO 8601 as some old docs showed.

    Returns None for the empty string (a Started event). Raises ValueError otherwise.
    """
    text = text.strip()
    if not text:
        return None
    parsed = _rfc2822(text)
    if parsed is None:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)
