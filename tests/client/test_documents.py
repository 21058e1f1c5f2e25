"""Real payloads through the client: every era's documents, unknown types and fields kept,
strict only about bodies that are not documents at all."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from forewarn.client import (
    BadRequestError,
    Document,
    DocumentError,
    EndpointError,
    EventSource,
    EventStatus,
    EventType,
    MockTransport,
    ResourceType,
    ScheduledEventsClient,
    diff_documents,
    parse_document,
)
from tests.client.conftest import BASE, Script, reply

SEP_19 = datetime(2016, 9, 19, 18, 29, 47, tzinfo=UTC)

# The documented 2017-03-01 sample: a string incarnation and underscore-prefixed VM names.
CAPTURED_2017_03_01 = b"""{
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
# A cloud service role instance, already Started (NotBefore "").
CAPTURED_2017_08_01 = (
    b'{"DocumentIncarnation":3,"Events":[{"EventId":"C7061BAC-AFDC-4513-B24B-AA5F13A16123",'
    b'"EventStatus":"Started","EventType":"Reboot","ResourceType":"VirtualMachine",'
    b'"Resources":["WebRole_IN_0"],"NotBefore":""}]}'
)
# The 2017 articles' ISO date (a documentation error, still parsed).
CAPTURED_2017_11_01 = (
    b'{"DocumentIncarnation":"12","Events":[{"EventId":"E1","EventStatus":"Scheduled",'
    b'"EventType":"Preempt","ResourceType":"VirtualMachine","Resources":["spot-0"],'
    b'"NotBefore":"2017-11-02T11:00:00Z"}]}'
)
CAPTURED_2019_04_01 = (
    b'{"DocumentIncarnation":5,"Events":[{"EventId":"A1","EventStatus":"Scheduled",'
    b'"EventType":"Freeze","ResourceType":"VirtualMachine","Resources":["myvm"],'
    b'"NotBefore":"Mon, 19 Sep 2016 18:29:47 GMT","Description":"Virtual machine is being '
    b'paused because of a memory-preserving Live Migration operation."}]}'
)
CAPTURED_2020_07_01 = (
    b'{"DocumentIncarnation":7,"Events":[{"EventId":"8C3A0A3B-5E0C-4F1F-9C3B-1E7A2D0B9F11",'
    b'"EventStatus":"Scheduled","EventType":"Reboot","ResourceType":"VirtualMachine",'
    b'"Resources":["web-0"],"NotBefore":"Mon, 19 Sep 2016 18:29:47 GMT",'
    b'"Description":"Virtual machine is going to be restarted as requested by authorized user.",'
    b'"EventSource":"User","DurationInSeconds":-1}]}'
)
EMPTY = b'{"DocumentIncarnation":1,"Events":[]}'
# A document from a future service: new event type, status, resource type and fields.
FUTURE = (
    b'{"DocumentIncarnation":9,"Events":[{"EventId":"H1","EventStatus":"Pending",'
    b'"EventType":"Hibernate","ResourceType":"VirtualMachineScaleSet","Resources":["vm"],'
    b'"NotBefore":"Mon, 19 Sep 2016 18:29:47 GMT","EventSource":"Customer",'
    b'"DurationInSeconds":30,"Priority":"High","Details":{"reason":"x"}}],"Region":"w"}'
)
MISSING_VERSION = (
    b'{"error":"Bad request. api-version was not specified in the request. '
    b'For more information refer to aka.ms/azureimds",'
    b'"newest-versions":["2020-07-01","2019-08-01","2019-04-01"]}'
)
HEADER_MISSING = b'{"error":"Bad request. Required metadata header not specified"}'


def _get(body: bytes, status: int = 200, **headers: str) -> Document:
    client = ScheduledEventsClient(
        BASE, transport=MockTransport(Script([reply(status, body, **headers)]))
    )
    with client:
        return client.get()


def test_2017_03_01_sample() -> None:
    document = _get(CAPTURED_2017_03_01)
    assert document.incarnation == 1  # "1" on the wire
    (event,) = document.events
    assert event.event_id == "602d9444-d2cd-49c7-8624-8643e7171297"
    assert (event.event_type, event.status) == (EventType.FREEZE, EventStatus.SCHEDULED)
    assert event.resource_type is ResourceType.VIRTUAL_MACHINE
    assert event.resources == ("_myvm", "_othervm")
    assert event.not_before == SEP_19 and event.not_before.tzinfo is not None
    # fields this version does not have take their documented defaults
    assert (event.description, event.source, event.duration_seconds) == ("", "Platform", -1)
    assert event.affects("myvm") and event.affects("OTHERVM") and not event.affects("vm")
    assert document.for_vm("myvm") == (event,)
    assert document.for_vm("nobody") == ()
    assert not event.started


def test_started_event_has_no_not_before() -> None:
    (event,) = _get(CAPTURED_2017_08_01).events
    assert event.started and event.status is EventStatus.STARTED
    assert event.not_before is None
    assert event.affects("WebRole_IN_0")


def test_string_incarnation_and_iso_date() -> None:
    document = _get(CAPTURED_2017_11_01)
    assert document.incarnation == 12
    assert document.events[0].event_type is EventType.PREEMPT
    assert document.events[0].not_before == datetime(2017, 11, 2, 11, tzinfo=UTC)


def test_description_without_source() -> None:
    (event,) = _get(CAPTURED_2019_04_01).events
    assert event.description.startswith("Virtual machine is being paused")
    assert event.source is EventSource.PLATFORM


def test_newest_document_every_field() -> None:
    document = _get(CAPTURED_2020_07_01, ETag='"7"')
    assert document.etag == '"7"'
    (event,) = document.events
    assert event.source is EventSource.USER
    assert event.duration_seconds == -1
    assert event.description == (
        "Virtual machine is going to be restarted as requested by authorized user."
    )
    assert event.extra == {}


def test_empty_document() -> None:
    assert _get(EMPTY) == Document(incarnation=1, events=(), etag=None)


def test_unknown_type_status_and_fields_are_kept() -> None:
    document = _get(FUTURE)
    (event,) = document.events
    assert event.event_type == "Hibernate" and not isinstance(event.event_type, EventType)
    assert event.status == "Pending" and not event.started
    assert event.resource_type == "VirtualMachineScaleSet"
    assert event.source == "Customer"
    assert event.duration_seconds == 30
    assert event.extra == {"Priority": "High", "Details": {"reason": "x"}}
    assert document.extra == {"Region": "w"}
    hash(event)  # events stay usable in sets and as keys, extra fields and all
    assert len({event, event}) == 1


def test_odd_values_are_kept_not_fatal() -> None:
    body = (
        b'{"DocumentIncarnation":2,"Events":[{"EventId":"X","EventStatus":"Scheduled",'
        b'"EventType":"Freeze","Resources":["a"],"NotBefore":"next tuesday",'
        b'"DurationInSeconds":"long"}]}'
    )
    (event,) = _get(body).events
    assert event.not_before is None
    assert event.duration_seconds == -1
    assert event.extra == {"NotBefore": "next tuesday", "DurationInSeconds": "long"}
    assert event.resource_type is ResourceType.VIRTUAL_MACHINE  # absent: the only kind


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"<html>captive portal</html>", "not JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"compute": {}}', "not a Scheduled Events document"),
        (b'{"DocumentIncarnation": "seven", "Events": []}', "DocumentIncarnation"),
        (b'{"DocumentIncarnation": 1, "Events": {"a": 1}}', "Events must be a list"),
        (b'{"DocumentIncarnation": 1, "Events": [{"EventType": "Freeze"}]}', "EventId"),
        (b'{"DocumentIncarnation": 1, "Events": [], "x": "\xff"}', "UTF-8"),
        (b"[" * 100_000, "nested too deeply"),
    ],
)
def test_a_body_that_is_no_document_is_a_document_error(body: bytes, fragment: str) -> None:
    with pytest.raises(DocumentError) as caught:
        _get(body)
    assert caught.value.status == 200
    assert caught.value.body == body
    assert fragment in str(caught.value)


@pytest.mark.parametrize("body", [MISSING_VERSION, HEADER_MISSING])
def test_error_bodies_are_carried(body: bytes) -> None:
    with pytest.raises(BadRequestError) as caught:
        _get(body, status=400)
    error = caught.value
    assert isinstance(error, EndpointError)
    assert (error.status, error.body) == (400, body)
    assert error.error.startswith("Bad request.")
    assert error.url.startswith(BASE + "/metadata/scheduledevents?api-version=")
    assert str(error).startswith("HTTP 400 from http://169.254.169.254/metadata/")


@pytest.mark.parametrize(
    ("body", "text"),
    [
        (b'{"error": "bad \xff"}', '{"error": "bad \ufffd"}'),
        (b"[" * 100_000, "[" * 100_000),
        (b'{"error": 5}', '{"error": 5}'),
        (b" not json ", "not json"),
    ],
)
def test_an_error_body_that_is_not_imds_json_is_carried_as_text(body: bytes, text: str) -> None:
    """Whatever an error answer carries, the caller gets the EndpointError (never the
    JSON decoder's UnicodeDecodeError or RecursionError), its text what the body says."""
    with pytest.raises(BadRequestError) as caught:
        _get(body, status=400)
    assert caught.value.body == body
    assert caught.value.error == text


def test_diff_by_id_ignoring_case() -> None:
    old = parse_document(CAPTURED_2020_07_01)
    started = CAPTURED_2020_07_01.replace(b'"Scheduled"', b'"Started"').replace(
        b'"Mon, 19 Sep 2016 18:29:47 GMT"', b'""'
    )
    new = parse_document(started.replace(b"8C3A0A3B", b"8c3a0a3b"))
    change = diff_documents(old, new)
    assert (change.added, change.removed) == ((), ())
    assert [e.status for e in change.updated] == [EventStatus.STARTED]
    gone = diff_documents(new, parse_document(EMPTY))
    assert gone.removed == new.events and not gone.added and not gone.updated
    assert not diff_documents(old, old)
