"""Hostile sizes and bodies on the metadata listener, over real sockets (issue 6, section 2).

A malformed approval body is a 400 however it is malformed; a body over the limit is
refused as soon as its size is known (before any ``100 Continue``, without reading it) and
the connection closed; a request head over the limit is a 431 whether it arrives in one
write or many.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from forewarn.imds.endpoint import MAX_BODY
from forewarn.imds.reading import MAX_HEAD
from tests.imds.conftest import EMPTY_WEB, NEWEST, Imds, reboot_document
from tests.imds.rawhttp import (
    TIMEOUT,
    TOO_LARGE_BODY,
    WORKERS0,
    Client,
    Served,
    expected_bytes,
    get,
    request,
    serve,
    served,
    start_requests,
    web1,
)

__all__ = ["serve", "served", "web1"]  # fixtures shared from rawhttp

HEAD_TOO_LARGE_BODY = b'{"error":"Request header fields too large"}'


def post_head(*headers: tuple[str, str]) -> bytes:
    """A POST StartRequests head whose framing ``headers`` announce a body sent apart."""
    return request("POST", headers=(("Metadata", "true"), *headers))


async def assert_refused_too_large(client: Client) -> None:
    """413 with ``connection: close``, then the server closes."""
    response = await client.response()
    assert response.raw == expected_bytes(
        response, b"413 Request Entity Too Large", TOO_LARGE_BODY, close=True
    )
    assert await client.rest() == b""


# ---------------------------------------------------------------- malformed bodies


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"StartRequests":[{"EventId":"\xff"}]}', "Request body is not valid UTF-8"),
        (b"[" * 30_000 + b"]" * 30_000, "Request body is nested too deeply"),
        (b'{"StartRequests":' + b"[" * 30_000 + b"]" * 30_000 + b"}",
         "Request body is nested too deeply"),
    ],
    ids=["invalid-utf8", "30000-deep", "30000-deep-start-requests"],
)  # fmt: skip
async def test_a_hostile_approval_body_is_400_and_changes_nothing(
    imds: Imds, web1: Client, reboot_web0: str, body: bytes, message: str
) -> None:
    before = imds.incarnation()
    rejected, after = await web1.ask(request("POST", body=body), get())
    assert rejected.raw == expected_bytes(
        rejected, b"400 Bad Request", json.dumps({"error": message}, separators=(",", ":")).encode()
    )
    assert imds.event(reboot_web0).status == "Scheduled"
    assert imds.incarnation() == before
    assert after.body == reboot_document(NEWEST)  # the connection is still good


# ------------------------------------------------------------------- body limits


@pytest.mark.parametrize("length", [MAX_BODY + 1, 1 << 30, 2**64 - 1])
async def test_a_declared_length_over_the_limit_is_refused_before_the_body(
    imds: Imds, web1: Client, reboot_web0: str, length: int
) -> None:
    await web1.send(post_head(("Content-Length", str(length))))  # no body is ever sent
    await assert_refused_too_large(web1)
    assert imds.event(reboot_web0).approved_by is None


async def test_expect_100_continue_with_an_oversized_length_gets_413_and_no_100(
    web1: Client,
) -> None:
    await web1.send(post_head(("Expect", "100-continue"), ("Content-Length", str(1 << 30))))
    first_line = await asyncio.wait_for(web1.reader.readline(), TIMEOUT)
    assert first_line == b"HTTP/1.1 413 Request Entity Too Large\r\n"


async def test_a_giant_chunk_is_refused_once_past_the_limit(
    imds: Imds, web1: Client, reboot_web0: str
) -> None:
    # A chunked body announces no total; this chunk claims 2**64 - 1 bytes. The server must
    # stop at the limit, not read on for ever (the client here never sends more).
    await web1.send(post_head(("Transfer-Encoding", "chunked")) + b"ffffffffffffffff\r\n")
    await web1.send(b" " * (MAX_BODY + 1))
    await assert_refused_too_large(web1)
    assert imds.event(reboot_web0).approved_by is None


CHUNKED = ("Transfer-Encoding", "chunked")


@pytest.mark.parametrize(
    "writes",
    [
        [post_head(CHUNKED) + b"ffffffffffffffff\r\n"],
        [post_head(CHUNKED), b"ffffffffffffffff\r\n"],
        [post_head(CHUNKED) + b"ffffffffffffffff\r\nsome data"],
        [post_head(CHUNKED) + b"ffffffffffffffff;name=value\r\n"],
        [post_head(CHUNKED) + b"ffffffff", b"ffffffff\r\n"],  # the size line split
        [post_head(CHUNKED) + b"10\r\n" + b"x" * 16 + b"\r\n" + b"fff1\r\n"],
        [post_head(CHUNKED) + b"fff0\r\n" + b"x" * 0xFFF0 + b"\r\n", b"11\r\n"],
    ],
    ids=["2^64-1", "2^64-1-apart", "2^64-1-with-data", "2^64-1-extension", "split",
         "second-chunk", "second-chunk-apart"],
)  # fmt: skip
async def test_a_chunk_size_over_the_limit_is_refused_at_once(
    imds: Imds, web1: Client, reboot_web0: str, writes: list[bytes]
) -> None:
    # The size line says the body will pass 64 KiB: 413 now (TIMEOUT, 5 s, is far below the
    # 30 s body deadline that answered 408 before), without waiting for the data.
    await web1.send(*writes, pause=0.05)
    await assert_refused_too_large(web1)
    assert imds.event(reboot_web0).approved_by is None


async def test_a_chunk_within_the_limit_is_waited_for(web1: Client, reboot_web0: str) -> None:
    body = start_requests(reboot_web0)
    body += b" " * (MAX_BODY - len(body))  # exactly the limit, in two chunks
    size_line = b"%x\r\n" % (len(body) - 100)
    await web1.send(post_head(CHUNKED) + b"64\r\n" + body[:100] + b"\r\n" + size_line)
    await web1.assert_open()  # not refused: the chunk fits
    await web1.send(body[100:] + b"\r\n0\r\n\r\n")
    response = await web1.response()
    assert (response.status, response.body) == (200, b"")


async def test_refusal_lets_other_connections_of_the_vm_work(served: Served) -> None:
    refused = await served.connect()
    await refused.send(post_head(("Content-Length", str(1 << 30))))
    await assert_refused_too_large(refused)
    [fine] = await (await served.connect()).ask(get())
    assert (fine.status, fine.body) == (200, EMPTY_WEB)


# ------------------------------------------------------------------- head limits


@pytest.mark.parametrize(
    "headers",
    [
        [("X-Padding", "a" * 100_000)],
        [(f"X-{i}", "b" * 90) for i in range(1100)],  # many headers, each small
    ],
    ids=["one-100kb-header", "1100-headers"],
)
async def test_a_head_over_64_kib_in_one_write_is_431(
    served: Served, web1: Client, headers: list[tuple[str, str]]
) -> None:
    await web1.send(get(NEWEST, *headers))  # the whole head in one write
    response = await web1.response()
    assert response.raw == expected_bytes(
        response, b"431 Request Header Fields Too Large", HEAD_TOO_LARGE_BODY, close=True
    )
    assert await web1.rest() == b""
    [fine] = await (await served.connect(WORKERS0)).ask(get())
    assert fine.status == 200


async def test_a_head_just_under_the_limit_is_served(web1: Client) -> None:
    padding = "a" * (MAX_HEAD - 1024)
    [response] = await web1.ask(get(NEWEST, ("X-Padding", padding)))
    assert (response.status, response.body) == (200, EMPTY_WEB)
    await web1.assert_open()
