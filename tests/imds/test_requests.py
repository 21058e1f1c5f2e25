"""Request rules of the Scheduled Events endpoint (CONTRACT section 1, R1 to R11)."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import pytest

from tests.imds.conftest import (
    BAD_VERSION_BODY,
    EMPTY_WEB,
    HEADER_BODY,
    JSON_TYPE,
    METHOD_BODY,
    MISSING_VERSION_BODY,
    NEWEST,
    NOT_FOUND_BODY,
    SE,
    XFF_BODY,
    Imds,
    assert_json_reply,
    compact,
    reboot_document,
)
from tests.support.wire import VERSIONS

SE_PATHS = [
    "/metadata/scheduledevents",
    "/metadata/scheduledEvents",
    "/Metadata/ScheduledEvents",
    "/METADATA/SCHEDULEDEVENTS",
    "/metadata/scheduledevents/",
    "/metadata/scheduledEvents/",
]


# ----------------------------------------------------------------------- R1 path


@pytest.mark.parametrize("path", SE_PATHS)
async def test_r1_get_on_any_spelling_of_the_path(imds: Imds, path: str) -> None:
    response = await imds.get(path=path)
    assert_json_reply(response, 200, EMPTY_WEB)
    assert response.headers["etag"] == '"1"'


@pytest.mark.parametrize("path", SE_PATHS)
async def test_r1_post_on_any_spelling_of_the_path(imds: Imds, reboot_web0: str, path: str) -> None:
    response = await imds.post("web-1", reboot_web0, path=path)
    assert_json_reply(response, 200, b"")
    assert imds.event(reboot_web0).status == "Started"


@pytest.mark.parametrize(
    "path",
    [
        "/metadata/scheduledevent",
        "/metadata/scheduledevents/extra",
        "/metadata/scheduled-events",
        "/metadata",
        "/metadata/",
        "/",
        "/scheduledevents",
        "//metadata/scheduledevents",
    ],
)
@pytest.mark.parametrize("method", ["GET", "POST", "PUT"])
async def test_r9_unknown_path_is_404(imds: Imds, path: str, method: str) -> None:
    response = await imds.request(method, path)
    assert_json_reply(response, 404, NOT_FOUND_BODY)
    assert "allow" not in response.headers


# ---------------------------------------------------------- R2 to R4 api-version


@pytest.mark.parametrize(
    "params",
    [
        {"format": "json"},
        {"format": "text"},
        {"foo": "bar"},
        {"format": "json", "x": "1", "": ""},
    ],
)
async def test_r2_extra_query_parameters_are_tolerated(
    imds: Imds, reboot_web0: str, params: dict[str, str]
) -> None:
    response = await imds.get(params=params)
    assert_json_reply(response, 200, reboot_document(NEWEST))


async def test_r2_version_after_other_parameters(imds: Imds) -> None:
    response = await imds.raw(query=b"format=json&api-version=2019-08-01")
    assert (response.status, response.body) == (200, EMPTY_WEB)


@pytest.mark.parametrize("version", VERSIONS)
async def test_r3_every_version_answers_its_own_rendering(
    imds: Imds, reboot_web0: str, version: str
) -> None:
    response = await imds.get(version=version)
    assert_json_reply(response, 200, reboot_document(version))
    assert response.headers["etag"] == '"2"'


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("query", [b"", b"format=json", b"api-version=", b"api-versions=x"])
async def test_r4_missing_version(imds: Imds, method: str, query: bytes) -> None:
    response = await imds.raw(method=method, query=query, body=b'{"StartRequests":[]}')
    assert (response.status, response.body) == (400, MISSING_VERSION_BODY)
    assert response.header("content-type") == JSON_TYPE


async def test_r4_missing_version_via_http(imds: Imds) -> None:
    assert_json_reply(await imds.get(version=None), 400, MISSING_VERSION_BODY)


@pytest.mark.parametrize(
    "version",
    ["latest", "2016-08-01", "2021-01-01", "2019-02-01", "2020-07-01 ", "2020-7-1", "2020-07-1"],
)
@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_r4_unknown_version(imds: Imds, reboot_web0: str, version: str, method: str) -> None:
    response = await imds.request(
        method, version=version, json_body={"StartRequests": [{"EventId": reboot_web0}]}
    )
    assert_json_reply(response, 400, BAD_VERSION_BODY)
    assert imds.event(reboot_web0).approved_by is None


# ----------------------------------------------------------- R5 Metadata header


@pytest.mark.parametrize("value", ["true", "True", "TRUE", "tRuE"])
@pytest.mark.parametrize("name", ["Metadata", "metadata", "METADATA"])
async def test_r5_metadata_header_is_case_insensitive(imds: Imds, name: str, value: str) -> None:
    response = await imds.get(metadata=None, headers={name: value})
    assert_json_reply(response, 200, EMPTY_WEB)


@pytest.mark.parametrize("value", [b" TRUE ", b"true ", b"  true", b"\tTrue\t"])
async def test_r5_metadata_header_value_is_trimmed(imds: Imds, value: bytes) -> None:
    response = await imds.raw(headers=[(b"metadata", value)])
    assert (response.status, response.body) == (200, EMPTY_WEB)


@pytest.mark.parametrize("value", [None, "false", "False", "", "1", "yes", "truee", "t rue"])
@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_r5_metadata_header_missing_or_not_true(
    imds: Imds, reboot_web0: str, value: str | None, method: str
) -> None:
    response = await imds.request(
        method, metadata=value, json_body={"StartRequests": [{"EventId": reboot_web0}]}
    )
    assert_json_reply(response, 400, HEADER_BODY)
    assert imds.event(reboot_web0).approved_by is None


async def test_r5_other_header_named_like_metadata_does_not_count(imds: Imds) -> None:
    response = await imds.get(metadata=None, headers={"Metadata-Flavor": "true"})
    assert_json_reply(response, 400, HEADER_BODY)


# --------------------------------------------------------- R6 2017-03-01 POST


async def test_r6_2017_03_01_post_needs_no_metadata_header(imds: Imds, reboot_web0: str) -> None:
    response = await imds.post("web-1", reboot_web0, version="2017-03-01", metadata=None)
    assert_json_reply(response, 200, b"")
    event = imds.event(reboot_web0)
    assert (event.approved_by, event.status) == ("web-1", "Started")


async def test_r6_2017_03_01_get_still_needs_the_header(imds: Imds) -> None:
    response = await imds.get(version="2017-03-01", metadata=None)
    assert_json_reply(response, 400, HEADER_BODY)


@pytest.mark.parametrize("version", VERSIONS[1:])
async def test_r6_later_versions_post_needs_the_header(
    imds: Imds, reboot_web0: str, version: str
) -> None:
    response = await imds.post("web-1", reboot_web0, version=version, metadata=None)
    assert_json_reply(response, 400, HEADER_BODY)
    assert imds.event(reboot_web0).approved_by is None


# ------------------------------------------------------------ R7 X-Forwarded-For


@pytest.mark.parametrize("name", ["X-Forwarded-For", "x-forwarded-for"])
@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_r7_forwarded_requests_are_refused(
    imds: Imds, reboot_web0: str, name: str, method: str
) -> None:
    response = await imds.request(
        method,
        headers={name: "10.0.0.1"},
        json_body={"StartRequests": [{"EventId": reboot_web0}]},
    )
    assert_json_reply(response, 400, XFF_BODY)
    assert imds.event(reboot_web0).approved_by is None


async def test_r7_forwarded_refused_on_instance_metadata(imds: Imds) -> None:
    response = await imds.get(
        path="/metadata/instance", version="2021-02-01", headers={"X-Forwarded-For": "1.2.3.4"}
    )
    assert_json_reply(response, 400, XFF_BODY)


# --------------------------------------------------------------- R9 methods


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"])
@pytest.mark.parametrize("path", [SE, "/metadata/ScheduledEvents/"])
async def test_r9_other_methods_are_405(imds: Imds, method: str, path: str) -> None:
    response = await imds.raw(method=method, path=path)
    assert (response.status, response.body) == (405, METHOD_BODY)
    assert response.header("allow") == "GET, POST"
    assert response.header("content-type") == JSON_TYPE
    assert response.header("content-length") == str(len(METHOD_BODY))


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH"])
async def test_r9_405_via_http(imds: Imds, method: str) -> None:
    response = await imds.request(method)
    assert_json_reply(response, 405, METHOD_BODY)
    assert response.headers["allow"] == "GET, POST"


# --------------------------------------------------------------- R10 framing


@pytest.mark.parametrize(
    ("kwargs", "status"),
    [
        ({}, 200),
        ({"query": b""}, 400),
        ({"headers": []}, 400),
        ({"path": "/nowhere"}, 404),
        ({"method": "PUT"}, 405),
        ({"method": "POST", "body": b"{"}, 400),
    ],
)
async def test_r10_json_framing(
    imds: Imds, reboot_web0: str, kwargs: dict[str, object], status: int
) -> None:
    response = await imds.raw(**kwargs)
    assert response.status == status
    assert response.header("content-type") == JSON_TYPE
    assert response.header("content-length") == str(len(response.body))
    assert compact(response.body) == response.body
    assert b"\n" not in response.body


async def test_r10_post_success_has_empty_body_and_zero_length(
    imds: Imds, reboot_web0: str
) -> None:
    body = b'{"StartRequests":[{"EventId":"%s"}]}' % reboot_web0.encode()
    response = await imds.raw(method="POST", body=body)
    assert (response.status, response.body) == (200, b"")
    assert response.header("content-length") == "0"
    assert response.header("content-type") == JSON_TYPE
    assert response.header("etag") is None


# ---------------------------------------------------------- R11 absolute form


@pytest.mark.parametrize(
    "path",
    [
        "http://169.254.169.254/metadata/scheduledevents",
        "http://169.254.169.254/metadata/scheduledEvents/",
        "HTTP://169.254.169.254:80/Metadata/ScheduledEvents",
        "http://127.0.0.1:8169/metadata/scheduledevents",
    ],
)
async def test_r11_absolute_form_is_handled_like_origin_form(
    imds: Imds, reboot_web0: str, path: str
) -> None:
    origin = await imds.raw()
    absolute = await imds.raw(path=path)
    assert (absolute.status, absolute.body) == (200, reboot_document(NEWEST))
    assert absolute.headers == origin.headers


async def test_r11_absolute_form_post_approves(imds: Imds, reboot_web0: str) -> None:
    body = b'{"StartRequests":[{"EventId":"%s"}]}' % reboot_web0.encode()
    response = await imds.raw(
        method="POST", path="http://169.254.169.254/metadata/scheduledevents", body=body
    )
    assert (response.status, response.body) == (200, b"")
    assert imds.event(reboot_web0).approved_by == "web-1"


@pytest.mark.parametrize(
    "path",
    ["http://169.254.169.254", "http://169.254.169.254/", "http://169.254.169.254/metadata"],
)
async def test_r11_absolute_form_of_other_paths_is_404(imds: Imds, path: str) -> None:
    response = await imds.raw(path=path)
    assert (response.status, response.body) == (404, NOT_FOUND_BODY)


async def test_lifespan_is_acknowledged(imds: Imds) -> None:
    incoming: list[MutableMapping[str, Any]] = [
        {"type": "lifespan.startup"},
        {"type": "lifespan.shutdown"},
    ]
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> MutableMapping[str, Any]:
        return incoming.pop(0)

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    await imds.app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)
    assert sent == [
        {"type": "lifespan.startup.complete"},
        {"type": "lifespan.shutdown.complete"},
    ]
