"""render_document: exact bytes, key order, field and type gating, per api-version."""

from __future__ import annotations

import json
from typing import Any

import pytest

from forewarn.contract import EventStatus, EventType
from tests.contract.helpers import EPOCH_TEXT, expected_keys, has_key, make_event, render, supports
from tests.support.wire import VERSIONS

_HEAD = (
    b'{"DocumentIncarnation":1,"Events":[{"EventId":"602d9444-d2cd-49c7-8624-8643e7171297",'
    b'"EventStatus":"Scheduled","EventType":"Reboot","ResourceType":"VirtualMachine",'
)
_NOT_BEFORE = b'"NotBefore":"Mon, 19 Sep 2016 18:29:47 GMT"'
_DESCRIPTION = b',"Description":"Host server is undergoing maintenance."'
_SOURCE = b',"EventSource":"Platform"'
_DURATION = b',"DurationInSeconds":-1'
_TAIL = b"}]}"


def _events(body: bytes) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = json.loads(body)["Events"]
    return events


def _only_event(body: bytes) -> dict[str, Any]:
    (event,) = _events(body)
    return event


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("2017-03-01", _HEAD + b'"Resources":["_myvm"],' + _NOT_BEFORE + _TAIL),
        ("2017-08-01", _HEAD + b'"Resources":["myvm"],' + _NOT_BEFORE + _TAIL),
        ("2017-11-01", _HEAD + b'"Resources":["myvm"],' + _NOT_BEFORE + _TAIL),
        ("2019-01-01", _HEAD + b'"Resources":["myvm"],' + _NOT_BEFORE + _TAIL),
        ("2019-04-01", _HEAD + b'"Resources":["myvm"],' + _NOT_BEFORE + _DESCRIPTION + _TAIL),
        (
            "2019-08-01",
            _HEAD + b'"Resources":["myvm"],' + _NOT_BEFORE + _DESCRIPTION + _SOURCE + _TAIL,
        ),
        (
            "2020-07-01",
            _HEAD
            + b'"Resources":["myvm"],'
            + _NOT_BEFORE
            + _DESCRIPTION
            + _SOURCE
            + _DURATION
            + _TAIL,
        ),
    ],
)
def test_renders_exact_bytes_per_version(version: str, expected: bytes) -> None:
    assert render(version, [make_event()]) == expected


def test_renders_a_full_2020_07_01_document_exactly() -> None:
    events = [
        make_event(
            event_id="A",
            status=EventStatus.STARTED,
            event_type=EventType.FREEZE,
            resources=("vm1", "vm2"),
            description="Virtual machine is being paused because of a memory-preserving update.",
            source="User",
            duration_seconds=9,
        ),
        make_event(event_id="B", event_type=EventType.TERMINATE, description=""),
    ]
    assert render("2020-07-01", events, incarnation=42) == (
        b'{"DocumentIncarnation":42,"Events":['
        b'{"EventId":"A","EventStatus":"Started","EventType":"Freeze",'
        b'"ResourceType":"VirtualMachine","Resources":["vm1","vm2"],"NotBefore":"",'
        b'"Description":"Virtual machine is being paused because of a memory-preserving update.",'
        b'"EventSource":"User","DurationInSeconds":9},'
        b'{"EventId":"B","EventStatus":"Scheduled","EventType":"Terminate",'
        b'"ResourceType":"VirtualMachine","Resources":["myvm"],'
        b'"NotBefore":"Mon, 19 Sep 2016 18:29:47 GMT",'
        b'"Description":"","EventSource":"Platform","DurationInSeconds":-1}]}'
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_empty_document_is_exact(version: str) -> None:
    assert render(version, [], incarnation=0) == b'{"DocumentIncarnation":0,"Events":[]}'


@pytest.mark.parametrize("version", VERSIONS)
def test_key_order(version: str) -> None:
    body = json.loads(render(version, [make_event()]))
    assert list(body) == ["DocumentIncarnation", "Events"]
    assert list(body["Events"][0]) == expected_keys(version)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("key", ["Description", "EventSource", "DurationInSeconds"])
def test_newer_fields_are_absent_not_null(version: str, key: str) -> None:
    body = render(version, [make_event()])
    assert (key in _only_event(body)) is has_key(version, key)
    assert b"null" not in body


@pytest.mark.parametrize("version", VERSIONS)
def test_output_is_compact_json(version: str) -> None:
    body = render(version, [make_event(), make_event(event_id="2", resources=("a", "b"))])
    compact = json.dumps(json.loads(body), separators=(",", ":"), ensure_ascii=False)
    assert body == compact.encode()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("incarnation", [0, 1, 7, 2**31])
def test_incarnation_is_a_json_integer(version: str, incarnation: int) -> None:
    body = render(version, [make_event()], incarnation=incarnation)
    assert body.startswith(b'{"DocumentIncarnation":%d,' % incarnation)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("event_type", list(EventType))
def test_events_of_newer_types_are_left_out(version: str, event_type: EventType) -> None:
    body = render(version, [make_event(event_type=event_type)], incarnation=5)
    expected = [event_type.value] if supports(version, event_type) else []
    assert [e["EventType"] for e in _events(body)] == expected
    assert json.loads(body)["DocumentIncarnation"] == 5


@pytest.mark.parametrize("version", VERSIONS)
def test_type_filtering_keeps_order_of_the_rest(version: str) -> None:
    events = [make_event(event_id=t.value, event_type=t) for t in reversed(EventType)]
    ids = [e["EventId"] for e in _events(render(version, events))]
    assert ids == [t.value for t in reversed(EventType) if supports(version, t)]


@pytest.mark.parametrize("version", VERSIONS)
def test_resource_type_is_always_virtual_machine(version: str) -> None:
    events = [make_event(event_type=t) for t in EventType]
    assert {e["ResourceType"] for e in _events(render(version, events))} == {"VirtualMachine"}


@pytest.mark.parametrize("version", VERSIONS)
def test_iaas_names_get_an_underscore_only_in_2017_03_01(version: str) -> None:
    event = _only_event(render(version, [make_event(resources=("myvm", "othervm"))]))
    prefix = "_" if version == "2017-03-01" else ""
    assert event["Resources"] == [f"{prefix}myvm", f"{prefix}othervm"]


@pytest.mark.parametrize("version", VERSIONS)
def test_role_instances_never_get_an_underscore(version: str) -> None:
    names = ("FrontEnd_IN_0", "FrontEnd_IN_1")
    body = render(version, [make_event(resources=names)], role_instances=True)
    assert _only_event(body)["Resources"] == list(names)


@pytest.mark.parametrize("version", VERSIONS)
def test_empty_resources_render_as_empty_list(version: str) -> None:
    assert _only_event(render(version, [make_event(resources=())]))["Resources"] == []


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("not_before", "expected"),
    [
        (1474309787, EPOCH_TEXT),
        (1474309787.75, EPOCH_TEXT),
        (1488704587, "Sun, 05 Mar 2017 09:03:07 GMT"),
    ],
)
def test_not_before_is_rfc1123_gmt(version: str, not_before: float, expected: str) -> None:
    event = _only_event(render(version, [make_event(not_before=not_before)]))
    assert event["NotBefore"] == expected


@pytest.mark.parametrize("version", VERSIONS)
def test_not_before_is_empty_once_started(version: str) -> None:
    event = _only_event(render(version, [make_event(status=EventStatus.STARTED)]))
    assert event["EventStatus"] == "Started"
    assert event["NotBefore"] == ""


@pytest.mark.parametrize("duration", [-1, 0, 9, 900, 86400])
def test_duration_is_a_json_integer(duration: int) -> None:
    body = render("2020-07-01", [make_event(duration_seconds=duration)])
    assert body.endswith(b'"DurationInSeconds":%d}]}' % duration)


@pytest.mark.parametrize("version", [v for v in VERSIONS if has_key(v, "EventSource")])
@pytest.mark.parametrize("source", ["Platform", "User"])
def test_event_source_is_passed_through(version: str, source: str) -> None:
    assert _only_event(render(version, [make_event(source=source)]))["EventSource"] == source


@pytest.mark.parametrize("version", VERSIONS)
def test_accepts_any_iterable_of_events(version: str) -> None:
    events = [make_event(event_id=str(i)) for i in range(3)]
    assert render(version, iter(events)) == render(version, events)
