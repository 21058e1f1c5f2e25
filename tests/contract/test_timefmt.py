"""RFC 1123 formatting and lenient NotBefore parsing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import formatdate

import pytest
from hypothesis import given
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
