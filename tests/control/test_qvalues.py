"""Accept-style headers read with their weights: what the page and gzip choices rest on."""

from __future__ import annotations

from forewarn.control.compression import accepts_gzip
from forewarn.control.dashboard.routes import wants_page
from forewarn.control.qvalues import weighted


def test_items_get_their_q_values_lower_cased_and_blank_items_are_dropped() -> None:
    header = "Text/HTML ;q=0.9, application/json;q=bad, , gzip; level=1; Q=0"
    assert weighted(header) == {"text/html": 0.9, "application/json": 0.0, "gzip": 0.0}


def test_the_page_and_gzip_choices_follow_the_weights() -> None:
    assert wants_page("text/html,application/xhtml+xml,*/*;q=0.8")  # a browser
    assert not wants_page("*/*") and not wants_page("application/json, text/html;q=0.5")
    assert accepts_gzip("br, gzip;q=0.5") and accepts_gzip("*")
    assert not accepts_gzip("gzip;q=0") and not accepts_gzip("identity")
