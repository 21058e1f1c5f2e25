"""The durations the control API takes as text (``duration_text.py``): the OpenAPI
pattern narrows the one parser's syntax (``forewarn.contract.durations``), never widens
it: every text the document promises is read, to seconds within the API's bounds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forewarn.contract.durations import parse_duration
from forewarn.control.duration_text import MAX_SECONDS, NONZERO, ZERO_ALLOWED, duration_text


@settings(max_examples=100, deadline=None)
@given(st.from_regex(ZERO_ALLOWED, fullmatch=True))
def test_every_start_the_document_promises_is_read(text: str) -> None:
    seconds = duration_text(text, ZERO_ALLOWED, "after_seconds")
    assert seconds == parse_duration(text) and 0 <= seconds <= MAX_SECONDS


@settings(max_examples=100, deadline=None)
@given(st.from_regex(NONZERO, fullmatch=True))
def test_every_window_the_document_promises_is_read_and_not_empty(text: str) -> None:
    seconds = duration_text(text, NONZERO, "duration_seconds")
    assert seconds == parse_duration(text) and 0 < seconds <= MAX_SECONDS


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("5m", 300), ("1h30m", 5400), ("3d", 259200), ("PT5M", 300),
     ("P1DT2H", 93600), ("99d999h9999m999999.999s", 13749939.999)],
)  # fmt: skip
def test_texts_read_as_the_parser_reads_them(text: str, seconds: float) -> None:
    assert duration_text(text, NONZERO, "w") == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text", ["90", "+5m", "5 m", "pt5m", "5M", "100d", "1e3s", "PT", "P1M", "0s", "PT0S"]
)
def test_what_the_parser_takes_but_the_api_does_not_is_refused_naming_the_field(
    text: str,
) -> None:
    with pytest.raises(ValueError, match=r"^duration_seconds .* is not a duration the API"):
        duration_text(text, NONZERO, "duration_seconds")
