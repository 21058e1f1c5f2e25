"""RFC 1123 formatting and lenient NotBefore parsing, read as ``email.utils`` reads it
(the module parses by hand: these compare the two)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from email.utils import formatdate, parsedate_to_datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forewarn.contract import format_rfc1123, parse_not_before

_YEAR_9999 = 253402300799


@pytest.fixture(autouse=True)
def _local_time_is_not_utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run under UTC-5 local time, so that nothing here can lean on a UTC machine clock."""
    monkeypatch.setenv("TZ", "XST+05")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize(
    ("epoch", "expected"),
    [
        pytest.param(1474309787, "Mon, 19 Sep 2016 18:29:47 GMT", id="docs-sample"),
        pytest.param(0, "Thu, 01 Jan 1970 00:00:00 GMT", id="epoch-zero"),
        pytest.param(1488704587, "Sun, 05 Mar 2017 09:03:07 GMT", id="single-digit-day"),
        pytest.param(1488452400, "Thu, 02 Mar 2017 11:00:00 GMT", id="single-digit-day-2"),
        pytest.param(1582977600, "Sat, 29 Feb 2020 12:00:00 GMT", id="leap-day-2020"),
        pytest.param(1709251199, "Thu, 29 Feb 2024 23:59:59 GMT", id="leap-day-2024"),
        pytest.param(946684800, "Sat, 01 Jan 2000 00:00:00 GMT", id="y2k"),
        pytest.param(1640995199, "Fri, 31 Dec 2021 23:59:59 GMT", id="year-end"),
        pytest.param(2147483648, "Tue, 19 Jan 2038 03:14:08 GMT", id="past-2038"),
        pytest.param(1474309787.999, "Mon, 19 Sep 2016 18:29:47 GMT", id="fraction-dropped"),
        pytest.param(1474309787.001, "Mon, 19 Sep 2016 18:29:47 GMT", id="fraction-small"),
    ],
)
def test_format_rfc1123(epoch: float, expected: str) -> None:
    assert format_rfc1123(epoch) == expected


@given(st.integers(min_value=0, max_value=_YEAR_9999))
def test_format_rfc1123_agrees_with_email_formatdate(epoch: int) -> None:
    assert format_rfc1123(epoch) == formatdate(epoch, usegmt=True)


@given(st.floats(min_value=0, max_value=_YEAR_9999, allow_nan=False))
def test_parse_not_before_round_trips_formatted_dates(epoch: float) -> None:
    expected = datetime.fromtimestamp(int(epoch), tz=UTC)
    assert parse_not_before(format_rfc1123(epoch)) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("Mon, 19 Sep 2016 18:29:47 GMT", datetime(2016, 9, 19, 18, 29, 47), id="rfc"),
        pytest.param(
            "  Mon, 19 Sep 2016 18:29:47 GMT  ", datetime(2016, 9, 19, 18, 29, 47), id="rfc-padded"
        ),
        pytest.param(
            "Mon, 19 Sep 2016 18:29:47 +0200", datetime(2016, 9, 19, 16, 29, 47), id="rfc-offset"
        ),
        pytest.param("2017-03-02T11:00:00Z", datetime(2017, 3, 2, 11), id="iso-z"),
        pytest.param("2017-03-02T11:00:00", datetime(2017, 3, 2, 11), id="iso-naive-is-utc"),
        pytest.param("2017-03-02T12:00:00+01:00", datetime(2017, 3, 2, 11), id="iso-offset"),
        pytest.param(
            "2017-03-02T11:00:00.5Z", datetime(2017, 3, 2, 11, 0, 0, 500000), id="iso-fraction"
        ),
    ],
)
def test_parse_not_before_returns_aware_utc(text: str, expected: datetime) -> None:
    parsed = parse_not_before(text)
    assert parsed == expected.replace(tzinfo=UTC)
    assert parsed is not None
    assert parsed.tzinfo is UTC


@pytest.mark.parametrize("text", ["", " ", "\t\n"])
def test_parse_not_before_empty_means_started(text: str) -> None:
    assert parse_not_before(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "garbage",
        "Mon, 19 Sep 2016",
        "Mon, 99 Sep 2016 18:29:47 GMT",
        "Mon, 19 Sep 2016 25:29:47 GMT",
        "1474309787",
        "2017-13-02T11:00:00Z",
        "null",
    ],
)
def test_parse_not_before_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        parse_not_before(text)


@given(st.text())
def test_parse_not_before_only_ever_raises_value_error(text: str) -> None:
    try:
        parsed = parse_not_before(text)
    except ValueError:
        return
    assert parsed is None or parsed.tzinfo is UTC


def _as_email_reads(text: str) -> datetime | None:
    """``parse_not_before`` as it was written on ``email.utils`` (its OverflowError, for a
    year or a zone too large for a C int, taken as the ValueError it now is)."""
    text = text.strip()
    if not text:
        return None
    try:
        parsed = parsedate_to_datetime(text)
    except (TypeError, ValueError, OverflowError):
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def _outcome(parse: Callable[[str], datetime | None], text: str) -> object:
    try:
        parsed = parse(text)
    except ValueError:
        return ValueError
    return parsed if parsed is None else (parsed, parsed.tzinfo)


#: Forms email.utils reads besides RFC 1123's own, and the UTC moment each one means.
_EMAIL_FORMS = {
    "no-day": ("19 Sep 2016 18:29:47 GMT", (2016, 9, 19, 18, 29, 47)),
    "no-space-after-comma": ("Mon,19 Sep 2016 18:29:47 GMT", (2016, 9, 19, 18, 29, 47)),
    "day-without-comma": ("mon 19 Sep 2016 18:29:47 GMT", (2016, 9, 19, 18, 29, 47)),
    "rfc-850": ("Monday, 19-Sep-16 18:29:47 GMT", (2016, 9, 19, 18, 29, 47)),
    "month-first": ("Mon, Sep 19 2016 18:29:47 GMT", (2016, 9, 19, 18, 29, 47)),
    "long-month": ("Mon, 19 SEPTEMBER 2016 18:29:47 GMT", (2016, 9, 19, 18, 29, 47)),
    "two-digit-year": ("Mon, 19 Sep 16 18:29:47 GMT", (2016, 9, 19, 18, 29, 47)),
    "two-digit-year-1969": ("Fri, 19 Sep 69 18:29:47 GMT", (1969, 9, 19, 18, 29, 47)),
    "no-seconds": ("Mon, 19 Sep 2016 18:29 GMT", (2016, 9, 19, 18, 29, 0)),
    "dotted-time": ("Mon, 19 Sep 2016 18.29.47 GMT", (2016, 9, 19, 18, 29, 47)),
    "named-zone": ("Mon, 19 Sep 2016 13:29:47 EST", (2016, 9, 19, 18, 29, 47)),
    "zone-stuck-to-time": ("Mon, 19 Sep 2016 18:29:47+0200", (2016, 9, 19, 16, 29, 47)),
    "unknown-zone-is-utc": ("Mon, 19 Sep 2016 18:29:47 -0000", (2016, 9, 19, 18, 29, 47)),
    "no-zone-is-utc": ("Mon, 19 Sep 2016 18:29:47", (2016, 9, 19, 18, 29, 47)),
    "sixty-minutes": ("Mon, 19 Sep 2016 18:29:47 +0060", (2016, 9, 19, 17, 29, 47)),
    "zulu": ("19 Sep 2016 18:29:47 z", (2016, 9, 19, 18, 29, 47)),
}


@pytest.mark.parametrize("form", _EMAIL_FORMS)
def test_parse_not_before_reads_what_email_utils_reads(form: str) -> None:
    text, moment = _EMAIL_FORMS[form]
    assert parse_not_before(text) == datetime(*moment, tzinfo=UTC)
    assert _outcome(parse_not_before, text) == _outcome(_as_email_reads, text)


@pytest.mark.parametrize(
    "text",
    [
        "Mon, 19 Sep 2016 18:29:47 +99999999999999999999",  # a zone past a C int
        "Mon, 19 Sep 99999999999999999999 18:29:47 GMT",  # so is the year
        "Mon, 19 Sep 2016 18:29:47 +2400",  # a day or more off UTC
        "Mon, 19 Sep 2016 18:29:47:00 GMT",
        "Mon, 19 Sep 2016 18 GMT",
        "Mon, 19 Foo 2016 18:29:47 GMT",
        "Mon, 19 Sep 2016 1²:29:47 GMT",
        "Mon, , Sep 2016 18:29:47 GMT",
    ],
)
def test_parse_not_before_refuses_what_email_utils_refuses(text: str) -> None:
    """With a ValueError, never another exception (the email package's OverflowError
    escaped its callers: a document with such a NotBefore could not be read)."""
    with pytest.raises(ValueError):
        parse_not_before(text)


_TOKENS = ["Mon,", "mon", "Monday,", "Sun", "19", "9", "019", "32", "0", "Sep", "sep",
           "SEPTEMBER", "May", "mayo", "2016", "16", "69", "68", "99", "100", "-5", "18:29:47",
           "18:29", "18.29.47", "18.29", "1:2:3:4", "25:00:00", "23:59:60", "GMT", "gmt",
           "UT", "EST", "pdt", "+0200", "-0000", "+0000", "-0530", "+2400", "18:29:47+0200",
           "18:29:47-0500", "19-Sep-16", "19-sep-2016", "19--16", ",", "2016,", "18:29:47,",
           "9,", ":", "-", "+", "x", "1_0", "٣", "²", "Z", "+02:00", "a,b", "1,Sep",
           "99999999999999999999"]  # fmt: skip


@settings(max_examples=2000)
@given(st.lists(st.sampled_from(_TOKENS), min_size=1, max_size=7),
       st.sampled_from([" ", "  ", "\t", ""]))  # fmt: skip
def test_parse_not_before_agrees_with_email_utils(tokens: list[str], space: str) -> None:
    text = space.join(tokens)
    assert _outcome(parse_not_before, text) == _outcome(_as_email_reads, text)


@given(st.text())
def test_parse_not_before_agrees_with_email_utils_on_any_text(text: str) -> None:
    assert _outcome(parse_not_before, text) == _outcome(_as_email_reads, text)
