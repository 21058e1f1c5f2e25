"""Property: any list of events renders, per version, into exactly what that version shows."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forewarn.contract import EventStatus, EventType, RenderableEvent, parse_document
from tests.contract.helpers import expected_keys, render, supports
from tests.support.wire import VERSIONS

_text = st.text(st.characters(codec="utf-8"), max_size=20)

_events = st.lists(
    st.builds(
        RenderableEvent,
        event_id=st.text(st.characters(codec="utf-8"), min_size=1, max_size=20),  # never ""
        status=st.sampled_from(EventStatus),
        event_type=st.sampled_from(EventType),
        resources=st.lists(st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,14}", fullmatch=True)).map(
            tuple
        ),
        not_before=st.floats(min_value=0, max_value=4102444800, allow_nan=False),
        description=_text,
        source=st.sampled_from(["Platform", "User"]),
        duration_seconds=st.integers(min_value=-1, max_value=7 * 86400),
    ),
    max_size=8,
)


@pytest.mark.parametrize("version", VERSIONS)
@settings(deadline=None)
@given(events=_events, incarnation=st.integers(min_value=0, max_value=2**53))
def test_rendered_documents_show_exactly_the_supported_events(
    version: str, events: list[RenderableEvent], incarnation: int
) -> None:
    body = render(version, events, incarnation)
    shown = [e for e in events if supports(version, e.event_type)]

    raw = json.loads(body)
    assert list(raw) == ["DocumentIncarnation", "Events"]
    assert raw["DocumentIncarnation"] == incarnation
    assert [list(e) for e in raw["Events"]] == [expected_keys(version)] * len(shown)

    parsed = parse_document(body)
    assert parsed.incarnation == incarnation
    assert [(e.event_id, e.event_type, e.status) for e in parsed.events] == [
        (e.event_id, e.event_type.value, e.status.value) for e in shown
    ]
    assert [e.started for e in parsed.events] == [e.not_before is None for e in parsed.events]
    for original, back in zip(shown, parsed.events, strict=True):
        assert all(back.affects(name) for name in original.resources)
