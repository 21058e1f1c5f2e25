"""parse_document: tolerant of every era's payloads (unknown types, keys and odd values
kept), strict about bodies that are not documents."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from forewarn.contract import (
    Document,
    DocumentFormatError,
    Event,
    EventStatus,
    EventType,
    parse_document,
)
from tests.contract.helpers import EPOCH, has_key, make_event, render, supports
from tests.support.wire import VERSIONS

_SEP_19 = datetime(2016, 9, 19, 18, 29, 47, tzinfo=UTC)

_CAPTURED_2017_03_01 = b"""{
    "DocumentIncarnation": "1",
    "Events": [
        {
            "EventId": "602d9444-d2cd-49c7-8624-8643e7171297",
            "EventStatus": "Scheduled",
            "EventType": "Freeze",
            "ResourceType": "VirtualMachine",
            "Resources": ["_myvm", "_othervm"],
            "NotBefore": "Mon, 19 Sep 2016 18:29:47 GMT"
        }
    ]
}"""
_CAPTURED_2017_08_01 = (
    b'{"DocumentIncarnation":3,"Events":[{"EventId":"C7061BAC-AFDC-4513-B24B-AA5F13A16123",'
    b'"EventStatus":"Started","EventType":"Reboot","ResourceType":"VirtualMachine",'
    b'"Resources":["WebRole_IN_0"],"NotBefore":""}]}'
)
_CAPTURED_2017_11_01 = (
    b'{"DocumentIncarnation":"12","Events":[{"EventId":"E1","EventStatus":"Scheduled",'
    b'"EventType":"Preempt","ResourceType":"VirtualMachine","Resources":["spot-0"],'
    b'"NotBefore":"2017-11-02T11:00:00Z"}]}'
)
_CAPTURED_2019_01_01 = (
    b'{"DocumentIncarnation":2,"Events":[{"EventId":"T1","EventStatus":"Scheduled",'
    b'"EventType":"Terminate","ResourceType":"VirtualMachine","Resources":["vmss_3"],'
    b'"NotBefore":"Fri, 31 Dec 2021 23:59:59 GMT"}]}'
)
_CAPTURED_2019_08_01 = (
    b'{"DocumentIncarnation":9,"Events":[{"EventId":"R1","EventStatus":"Scheduled",'
    b'"EventType":"Redeploy","ResourceType":"VirtualMachine","Resources":["myvm"],'
    b'"NotBefore":"Mon, 19 Sep 2016 18:29:47 GMT",'
    b'"Description":"Virtual machine is going to be redeployed.","EventSource":"User"}]}'
)
_CAPTURED_2020_07_01 = (
    b'{"DocumentIncarnation":4,"Events":[{"EventId":"F1","EventStatus":"Scheduled",'
    b'"EventType":"Freeze","ResourceType":"VirtualMachine","Resources":["myvm"],'
    b'"NotBefore":"Mon, 19 Sep 2016 18:29:47 GMT","Description":"Host update.",'
    b'"EventSource":"Platform","DurationInSeconds":9}]}'
)
_FUTURE = (
    b'{"DocumentIncarnation":5,"Events":[{"EventId":"H1","EventStatus":"Scheduled",'
    b'"EventType":"Hibernate","ResourceType":"VirtualMachine","Resources":["myvm"],'
    b'"NotBefore":"","NewField":{"x":1}}],"Unknown":true}'
)


def _one(
    incarnation: int,
    event_id: str,
    status: str,
    event_type: str,
    resources: tuple[str, ...],
    not_before: datetime | None,
    *,
    description: str = "",
    source: str = "Platform",
    duration_seconds: int = -1,
) -> Document:
    """A document holding one event."""
    event = Event(
        event_id=event_id,
        status=status,
        event_type=event_type,
        resources=resources,
        not_before=not_before,
        description=description,
        source=source,
        duration_seconds=duration_seconds,
    )
    return Document(incarnation, (event,))


_GUID = "602d9444-d2cd-49c7-8624-8643e7171297"
_CLOUD_GUID = "C7061BAC-AFDC-4513-B24B-AA5F13A16123"
_NOV_2 = datetime(2017, 11, 2, 11, tzinfo=UTC)
_DEC_31 = datetime(2021, 12, 31, 23, 59, 59, tzinfo=UTC)
_REDEPLOY = "Virtual machine is going to be redeployed."


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            _CAPTURED_2017_03_01,
            _one(1, _GUID, "Scheduled", "Freeze", ("_myvm", "_othervm"), _SEP_19),
            id="2017-03-01",
        ),
        pytest.param(
            _CAPTURED_2017_08_01,
            _one(3, _CLOUD_GUID, "Started", "Reboot", ("WebRole_IN_0",), None),
            id="2017-08-01",
        ),
        pytest.param(
            _CAPTURED_2017_11_01,
            _one(12, "E1", "Scheduled", "Preempt", ("spot-0",), _NOV_2),
            id="2017-11-01-iso-date",
        ),
        pytest.param(
            _CAPTURED_2019_01_01,
            _one(2, "T1", "Scheduled", "Terminate", ("vmss_3",), _DEC_31),
            id="2019-01-01",
        ),
        pytest.param(
            _CAPTURED_2019_08_01,
            _one(
                9,
                "R1",
                "Scheduled",
                "Redeploy",
                ("myvm",),
                _SEP_19,
                description=_REDEPLOY,
                source="User",
            ),
            id="2019-08-01",
        ),
        pytest.param(
            _CAPTURED_2020_07_01,
            _one(
                4,
                "F1",
                "Scheduled",
                "Freeze",
                ("myvm",),
                _SEP_19,
                description="Host update.",
                source="Platform",
                duration_seconds=9,
            ),
            id="2020-07-01",
        ),
    ],
)
def test_parses_captured_payloads(body: bytes, expected: Document) -> None:
    assert parse_document(body) == expected


def test_future_types_and_unknown_keys_are_kept() -> None:
    document = parse_document(_FUTURE)
    (event,) = document.events
    assert (event.event_type, event.status, event.not_before) == ("Hibernate", "Scheduled", None)
    assert not isinstance(event.event_type, EventType)
    assert event.extra == {"NewField": {"x": 1}}
    assert document.extra == {"Unknown": True}


def test_odd_values_are_kept_in_extra_not_fatal() -> None:
    body = '{"Events":[{"EventId":"A","NotBefore":"soon","DurationInSeconds":"long"}]}'
    (event,) = parse_document(body).events
    assert (event.not_before, event.duration_seconds) == (None, -1)
    assert event.extra == {"NotBefore": "soon", "DurationInSeconds": "long"}


def test_older_payload_gets_defaults_for_newer_fields() -> None:
    (event,) = parse_document(_CAPTURED_2017_03_01).events
    assert event.resource_type == "VirtualMachine"
    assert event.description == ""
    assert event.source == "Platform"
    assert event.duration_seconds == -1


def test_accepts_str_as_well_as_bytes() -> None:
    assert parse_document(_CAPTURED_2020_07_01.decode()) == parse_document(_CAPTURED_2020_07_01)


@pytest.mark.parametrize(
    ("raw", "expected"), [("7", 7), ('"7"', 7), ('" 7 "', 7), ('"0"', 0), ('"-1"', -1)]
)
def test_incarnation_as_integer_or_string(raw: str, expected: int) -> None:
    assert parse_document(f'{{"DocumentIncarnation":{raw},"Events":[]}}').incarnation == expected


@pytest.mark.parametrize(
    "body",
    ['{"DocumentIncarnation":0}', '{"DocumentIncarnation":0,"Events":null}', '{"Events":[]}'],
)
def test_missing_parts_mean_an_empty_document(body: str) -> None:
    assert parse_document(body) == Document(0, ())


@pytest.mark.parametrize(
    ("field", "raw", "attribute", "expected"),
    [
        ("NotBefore", '""', "not_before", None),
        ("NotBefore", "null", "not_before", None),
        ("Description", "null", "description", ""),
        ("EventSource", "null", "source", "Platform"),
        ("EventSource", '""', "source", "Platform"),
        ("DurationInSeconds", "null", "duration_seconds", -1),
        ("DurationInSeconds", '"60"', "duration_seconds", 60),
        ("DurationInSeconds", "-1", "duration_seconds", -1),
        ("Resources", "null", "resources", ()),
    ],
)
def test_tolerated_field_values(field: str, raw: str, attribute: str, expected: object) -> None:
    body = f'{{"Events":[{{"EventId":"A","{field}":{raw}}}]}}'
    (event,) = parse_document(body).events
    assert getattr(event, attribute) == expected


@pytest.mark.parametrize(
    ("body", "match"),
    [
        pytest.param(b"", "not JSON", id="empty"),
        pytest.param(b"{", "not JSON", id="truncated"),
        pytest.param(b"\xff\xfe", "not JSON", id="not-utf8"),
        pytest.param(b"[]", "JSON object", id="array"),
        pytest.param(b'"doc"', "JSON object", id="string"),
        pytest.param(b"5", "JSON object", id="number"),
        pytest.param(b"null", "JSON object", id="null"),
        pytest.param(b"{}", "not a Scheduled Events document", id="no-keys"),
        pytest.param(b'{"compute":{}}', "not a Scheduled Events document", id="instance"),
        pytest.param(b'{"DocumentIncarnation":"seven"}', "DocumentIncarnation", id="inc-text"),
        pytest.param(b'{"DocumentIncarnation":true}', "DocumentIncarnation", id="inc-bool"),
        pytest.param(b'{"DocumentIncarnation":null}', "DocumentIncarnation", id="inc-null"),
        pytest.param(b'{"DocumentIncarnation":1.5}', "DocumentIncarnation", id="inc-float"),
        pytest.param(b'{"DocumentIncarnation":{}}', "DocumentIncarnation", id="inc-object"),
        pytest.param(b'{"Events":5}', "Events must be a list", id="events-number"),
        pytest.param(b'{"Events":{"EventId":"A"}}', "Events must be a list", id="events-obj"),
        pytest.param(b'{"Events":["A"]}', "must be a JSON object", id="event-string"),
        pytest.param(b'{"Events":[{"EventType":"Reboot"}]}', "EventId", id="no-event-id"),
        pytest.param(b'{"Events":[{"EventId":"A","Resources":"vm"}]}', "Resources", id="res"),
    ],
)
def test_rejects_non_documents(body: bytes, match: str) -> None:
    with pytest.raises(DocumentFormatError, match=match):
        parse_document(body)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        pytest.param(b'{"Events":[],"Note":"\xff"}', "UTF-8", id="not-utf8-in-a-string"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, "deeply", id="nested-too-deeply"),
        pytest.param(b'{"Events":[],"Big":1e999}', "out of range", id="number-out-of-range"),
        pytest.param(b'{"Events":[],"Note":"\\ud800"}', "surrogate", id="lone-surrogate"),
        pytest.param(b'{"Events":[],"N":NaN}', "NaN", id="nan"),
    ],
)
def test_a_hostile_body_is_a_document_format_error(body: bytes, match: str) -> None:
    """Not a UnicodeDecodeError or a RecursionError from the JSON decoder (msgspec let
    both through): the client turns this error, and only this one, into a DocumentError."""
    with pytest.raises(DocumentFormatError, match=match):
        parse_document(body)


def test_a_not_before_too_large_for_a_date_is_kept_as_text() -> None:
    """email.utils raised OverflowError for such a zone, which ended the whole parse."""
    not_before = "Mon, 19 Sep 2016 18:29:47 +99999999999999999999"
    body = json.dumps({"Events": [{"EventId": "A", "NotBefore": not_before}]})
    (event,) = parse_document(body).events
    assert event.not_before is None
    assert event.extra["NotBefore"] == not_before


def test_document_format_error_is_a_value_error() -> None:
    assert issubclass(DocumentFormatError, ValueError)


@pytest.mark.parametrize("version", VERSIONS)
def test_render_then_parse_round_trips(version: str) -> None:
    rendered = [
        make_event(
            event_id=f"{event_type}-{status}",
            status=status,
            event_type=event_type,
            resources=("myvm", "othervm"),
            not_before=EPOCH + 0.5,
            description=f"{event_type} soon",
            source="User",
            duration_seconds=30,
        )
        for event_type in EventType
        for status in EventStatus
    ]
    prefix = "_" if version == "2017-03-01" else ""
    expected = tuple(
        Event(
            event_id=e.event_id,
            status=e.status.value,
            event_type=e.event_type.value,
            resources=(f"{prefix}myvm", f"{prefix}othervm"),
            not_before=None if e.status is EventStatus.STARTED else _SEP_19,
            description=e.description if has_key(version, "Description") else "",
            source=e.source if has_key(version, "EventSource") else "Platform",
            duration_seconds=e.duration_seconds if has_key(version, "DurationInSeconds") else -1,
        )
        for e in rendered
        if supports(version, e.event_type)
    )
    assert parse_document(render(version, rendered, incarnation=17)) == Document(17, expected)
