"""parse_start_requests: the EventIds to start, or a StartRequestError naming the problem."""

from __future__ import annotations

import pytest

from forewarn.contract import StartRequestError, parse_start_requests


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            b'{"StartRequests": [{"EventId": "A"}, {"EventId": "B"}]}', ["A", "B"], id="two"
        ),
        pytest.param(
            b'{"StartRequests":[{"EventId":"B"},{"EventId":"A"}]}', ["B", "A"], id="order-kept"
        ),
        pytest.param(
            b'{"DocumentIncarnation": 7, "StartRequests": [{"EventId": "A"}]}',
            ["A"],
            id="incarnation-int",
        ),
        pytest.param(
            b'{"DocumentIncarnation": "7", "StartRequests": [{"EventId": "A"}]}',
            ["A"],
            id="incarnation-string",
        ),
        pytest.param(
            b'{"StartRequests": [{"EventId": "A", "Other": 1}], "X": null}', ["A"], id="extra-keys"
        ),
        pytest.param(b'{"StartRequests": [{"EventId": " A "}]}', ["A"], id="id-trimmed"),
        pytest.param(b'\n  {"StartRequests": [{"EventId": "A"}]}  \n', ["A"], id="whitespace"),
    ],
)
def test_accepts(body: bytes, expected: list[str]) -> None:
    assert parse_start_requests(body) == expected


def test_accepts_str_as_well_as_bytes() -> None:
    assert parse_start_requests('{"StartRequests":[{"EventId":"é"}]}') == ["é"]


@pytest.mark.parametrize(
    ("body", "match"),
    [
        pytest.param(b"", r"body is empty", id="empty"),
        pytest.param(b" \r\n\t", r"body is empty", id="whitespace"),
        pytest.param(b"{StartRequests}", r"not valid JSON", id="invalid-json"),
        pytest.param(b"\xff", r"not valid UTF-8", id="not-utf8"),
        pytest.param(
            b'{"StartRequests":[{"EventId":"\xff"}]}', r"not valid UTF-8", id="bad-utf8-in-id"
        ),
        pytest.param(
            b'{"StartRequests":[{"EventId":"A\xed\xa0\x80"}]}',
            r"not valid UTF-8",
            id="encoded-surrogate",
        ),
        pytest.param(b"[" * 30_000 + b"]" * 30_000, r"nested too deeply", id="deep-arrays"),
        pytest.param(
            b'{"a":' * 30_000 + b"1" + b"}" * 30_000, r"nested too deeply", id="deep-objects"
        ),
        pytest.param(
            b'{"StartRequests":' + b"[" * 30_000 + b"]" * 30_000 + b"}",
            r"nested too deeply",
            id="deep-start-requests",
        ),
        pytest.param(
            b'{"StartRequests":' + b"[" * 50 + b"]" * 50 + b"}",
            r"StartRequests\[0\] must be an object",
            id="shallow-nesting-is-just-wrong",
        ),
        pytest.param(b'[{"EventId":"A"}]', r"must be a JSON object", id="array"),
        pytest.param(b'"A"', r"must be a JSON object", id="string"),
        pytest.param(b"{}", r"StartRequests is missing", id="missing"),
        pytest.param(b'{"StartRequests":null}', r"StartRequests is missing", id="null"),
        pytest.param(
            b'{"startrequests":[{"EventId":"A"}]}', r"StartRequests is missing", id="wrong-case"
        ),
        pytest.param(
            b'{"StartRequests":{"EventId":"A"}}', r"StartRequests must be a list", id="object"
        ),
        pytest.param(b'{"StartRequests":"A"}', r"StartRequests must be a list", id="string-list"),
        pytest.param(b'{"StartRequests":[]}', r"StartRequests is empty", id="empty-list"),
        pytest.param(
            b'{"StartRequests":["A"]}', r"StartRequests\[0\] must be an object", id="entry-string"
        ),
        pytest.param(
            b'{"StartRequests":[{"EventId":"A"},null]}',
            r"StartRequests\[1\] must be an object",
            id="entry-null",
        ),
        pytest.param(
            b'{"StartRequests":[{}]}', r"StartRequests\[0\] has no string EventId", id="no-event-id"
        ),
        pytest.param(
            b'{"StartRequests":[{"EventId":5}]}',
            r"StartRequests\[0\] has no string EventId",
            id="event-id-int",
        ),
        pytest.param(
            b'{"StartRequests":[{"EventId":null}]}',
            r"StartRequests\[0\] has no string EventId",
            id="event-id-null",
        ),
        pytest.param(
            b'{"StartRequests":[{"EventId":"A"},{"EventId":""}]}',
            r"StartRequests\[1\] has no string EventId",
            id="event-id-empty",
        ),
        pytest.param(
            b'{"StartRequests":[{"EventId":"  "}]}',
            r"StartRequests\[0\] has no string EventId",
            id="event-id-blank",
        ),
        pytest.param(
            b'{"StartRequests":[{"eventid":"A"}]}',
            r"StartRequests\[0\] has no string EventId",
            id="event-id-wrong-case",
        ),
    ],
)
def test_rejects_with_a_message_naming_the_problem(body: bytes, match: str) -> None:
    with pytest.raises(StartRequestError, match=match):
        parse_start_requests(body)


def test_start_request_error_is_a_value_error() -> None:
    assert issubclass(StartRequestError, ValueError)


def test_a_utf8_byte_order_mark_is_ignored() -> None:
    assert parse_start_requests(b'\xef\xbb\xbf{"StartRequests": [{"EventId": "A"}]}') == ["A"]


def test_a_str_with_a_lone_surrogate_is_not_utf8() -> None:
    with pytest.raises(StartRequestError, match="not valid UTF-8"):
        parse_start_requests('{"StartRequests":[{"EventId":"\ud800"}]}')
