"""Error bodies, byte for byte."""

from __future__ import annotations

import pytest

from forewarn.contract import (
    BAD_VERSION,
    FORWARDED_NOT_ALLOWED,
    METADATA_HEADER_MISSING,
    METHOD_NOT_ALLOWED,
    MISSING_VERSION,
    NOT_FOUND,
    TOO_MANY_REQUESTS,
    error_body,
    version_error_body,
)

_NEWEST = b'"newest-versions":["2020-07-01","2019-08-01","2019-04-01"]'


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        pytest.param(
            MISSING_VERSION,
            b'{"error":"Bad request. api-version was not specified in the request. '
            b'For more information refer to aka.ms/azureimds",' + _NEWEST + b"}",
            id="missing",
        ),
        pytest.param(
            BAD_VERSION,
            b'{"error":"Bad request. api-version is invalid or was not specified in the '
            b'request. For more information refer to aka.ms/azureimds",' + _NEWEST + b"}",
            id="invalid",
        ),
    ],
)
def test_version_error_body_is_exact(message: str, expected: bytes) -> None:
    assert version_error_body(message) == expected


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        pytest.param(
            METADATA_HEADER_MISSING,
            b'{"error":"Bad request. Required metadata header not specified"}',
            id="metadata-header",
        ),
        pytest.param(
            FORWARDED_NOT_ALLOWED,
            b'{"error":"Bad request. X-Forwarded-For header is not allowed"}',
            id="x-forwarded-for",
        ),
        pytest.param(TOO_MANY_REQUESTS, b'{"error":"Too many requests"}', id="429"),
        pytest.param(METHOD_NOT_ALLOWED, b'{"error":"Method not allowed"}', id="405"),
        pytest.param(NOT_FOUND, b'{"error":"Not found"}', id="404"),
    ],
)
def test_error_body_is_exact(message: str, expected: bytes) -> None:
    assert error_body(message) == expected


def test_error_body_escapes_quotes_as_json() -> None:
    assert error_body('say "hi"') == b'{"error":"say \\"hi\\""}'
