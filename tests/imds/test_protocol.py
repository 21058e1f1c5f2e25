"""The HTTP/1.1 protocol of ``forewarn serve`` (``imds/protocol.py``), over real sockets.

Every test starts ``serve_endpoint`` on 127.0.0.1 and speaks raw HTTP over asyncio
streams (``rawhttp.py``), so the assertions are on the exact bytes on the wire.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import time
from email.utils import parsedate_to_datetime

import pytest

from forewarn.fabric import StoreUnavailable
from forewarn.imds.connection import Connection
from forewarn.imds.endpoint import MAX_BODY
from forewarn.imds.messages import TEXT, Reply, Request
from forewarn.imds.reading import MAX_HEAD
from tests.imds.conftest import (
    EMPTY_WEB,
    JSON_TYPE,
    NEWEST,
    RATE_BODY,
    TEXT_TYPE,
    Imds,
    ImdsFactory,
    event_id,
    reboot_document,
)
from tests.imds.rawhttp import (
    DATE_RE,
    FRONTEND0,
    MALFORMED_BODY,
    NAME_TARGET,
    TIMEOUT,
    TOO_LARGE_BODY,
    WEB1,
    WORKERS0,
    Client,
    Serve,
    Served,
    bound_socket,
    chunked,
    expected_bytes,
    get,
    parse_head,
    request,
    se_target,
    serve,
    served,
    start_requests,
    web1,
)
from tests.support.fabrics import fleet
from tests.support.wire import VERSIONS

__all__ = ["serve", "served", "web1"]  # fixtures shared from rawhttp

# ------------------------------------------------------------------ persistence


async def test_keep_alive_serves_several_requests_on_one_connection(
    web1: Client, reboot_web0: str
) -> None:
    for version in ("2020-07-01", "2019-01-01", "2017-03-01"):
        [response] = await web1.ask(get(version))
        body = reboot_document(version)
        assert response.raw == expected_bytes(response, b"200 OK", body, b'etag: "2"')
        assert response.header("connection") is None
    await web1.assert_open()
    [again] = await web1.ask(get())
    assert again.body == reboot_document(NEWEST)


async def test_pipelined_requests_are_answered_in_order(web1: Client, reboot_web0: str) -> None:
    responses = await web1.ask(get("2017-03-01"), request(target=NAME_TARGET), get("2019-08-01"))
    assert [r.status for r in responses] == [200, 200, 200]
    assert responses[0].body == reboot_document("2017-03-01")
    assert (responses[1].body, responses[1].header("content-type")) == (
        b"web-1",
        TEXT_TYPE.encode(),
    )
    assert responses[2].body == reboot_document("2019-08-01")
    await web1.assert_open()


async def test_connection_close_is_honoured(web1: Client) -> None:
    # A request pipelined after the closing one is never answered.
    await web1.send(get(NEWEST, ("Connection", "close")) + get())
    response = await web1.response()
    assert response.raw == expected_bytes(response, b"200 OK", EMPTY_WEB, b'etag: "1"', close=True)
    assert await web1.rest() == b""


async def test_http_1_0_without_keep_alive_is_closed(web1: Client) -> None:
    await web1.send(get(http="HTTP/1.0"))
    response = await web1.response()
    assert (response.status, response.body) == (200, EMPTY_WEB)
    assert response.header("connection") == b"close"
    assert await web1.rest() == b""


async def test_http_1_0_with_keep_alive_stays_open(web1: Client) -> None:
    keep = get(NEWEST, ("Connection", "keep-alive"), http="HTTP/1.0")
    first, second = await web1.ask(keep, keep)
    assert first.header("connection") is None
    assert second.body == EMPTY_WEB
    await web1.assert_open()


# -------------------------------------------------------------------- framing


async def test_absolute_form_is_handled_like_origin_form(web1: Client, reboot_web0: str) -> None:
    absolute = request(target=f"http://169.254.169.254{se_target()}")
    origin, absolute_reply = await web1.ask(get(), absolute)
    assert absolute_reply.body == reboot_document(NEWEST)
    assert absolute_reply.without_date == origin.without_date


async def test_status_line_and_headers_are_exact(web1: Client, reboot_web0: str) -> None:
    [response] = await web1.ask(get())
    body = reboot_document(NEWEST)
    assert response.raw == expected_bytes(response, b"200 OK", body, b'etag: "2"')
    assert response.header("content-length") == str(len(body)).encode()
    date = response.header("date")
    assert date is not None and DATE_RE.fullmatch(date), date
    assert abs(parsedate_to_datetime(date.decode()).timestamp() - time.time()) < 5


async def test_not_modified_has_no_body_and_pipelining_continues(
    web1: Client, reboot_web0: str
) -> None:
    not_modified, full = await web1.ask(get(NEWEST, ("If-None-Match", '"2"')), get())
    date = not_modified.header("date")
    assert date is not None
    assert not_modified.raw == (
        b"HTTP/1.1 304 Not Modified\r\ndate: " + date + b"\r\ncontent-type: "
        + JSON_TYPE.encode() + b'\r\netag: "2"\r\n\r\n'
    )  # fmt: skip
    assert full.raw == expected_bytes(full, b"200 OK", reboot_document(NEWEST), b'etag: "2"')
    await web1.assert_open()


# ---------------------------------------------------------------------- bodies


def post_head(*headers: tuple[str, str]) -> bytes:
    """The head of a POST StartRequests (the body follows separately)."""
    return request("POST", headers=(("Metadata", "true"), *headers))


async def test_post_body_split_across_writes_approves(
    imds: Imds, web1: Client, reboot_web0: str
) -> None:
    body = start_requests(reboot_web0)
    head = post_head(("Content-Type", "application/json"), ("Content-Length", str(len(body))))
    await web1.send(head[:20], head[20:], body[:7], body[7:30], body[30:], pause=0.01)
    response = await web1.response()
    assert response.raw == expected_bytes(response, b"200 OK", b"")
    assert (imds.event(reboot_web0).status, imds.event(reboot_web0).approved_by) == (
        "Started",
        "web-1",
    )


async def test_chunked_post_approves(imds: Imds, web1: Client, reboot_web0: str) -> None:
    body = start_requests(reboot_web0)
    head = post_head(("Transfer-Encoding", "chunked"))
    encoded = chunked(body[:5], body[5:40], body[40:])
    await web1.send(head, encoded[:9], encoded[9:50], encoded[50:], pause=0.01)
    response = await web1.response()
    assert (response.status, response.body) == (200, b"")
    assert imds.event(reboot_web0).approved_by == "web-1"


async def test_body_of_exactly_the_limit_is_accepted(
    imds: Imds, web1: Client, reboot_web0: str
) -> None:
    body = start_requests(reboot_web0)
    body += b" " * (MAX_BODY - len(body))
    [response] = await web1.ask(request("POST", body=body))
    assert (response.status, response.body) == (200, b"")
    assert imds.event(reboot_web0).status == "Started"


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
async def test_body_over_64_kib_is_refused_and_closed(
    imds: Imds, served: Served, web1: Client, reboot_web0: str, framing: str
) -> None:
    body = start_requests(reboot_web0)
    body += b" " * (MAX_BODY + 1 - len(body))
    if framing == "chunked":
        raw = post_head(("Transfer-Encoding", "chunked")) + chunked(body[:40000], body[40000:])
    else:
        raw = request("POST", body=body)
    await web1.send(raw + get())
    too_large = await web1.response()
    assert too_large.raw == expected_bytes(
        too_large, b"413 Request Entity Too Large", TOO_LARGE_BODY, close=True
    )
    assert await web1.rest() == b""  # refused and closed: what follows is not answered
    assert (imds.event(reboot_web0).status, imds.event(reboot_web0).approved_by) == (
        "Scheduled",
        None,
    )
    [after] = await (await served.connect(WEB1)).ask(get())
    assert after.body == reboot_document(NEWEST)


# ------------------------------------------------------------- malformed input


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + bytes(range(32)),  # a TLS hello
        b"\x00\xff garbage \xfe\r\n\r\n",
        b"BREW /metadata/scheduledevents HTTP/1.1\r\nMetadata: true\r\n\r\n",
        b"GET /metadata/scheduledevents HTTP/1.1 trailing\r\n\r\n",
    ],
    ids=["tls", "binary", "bad-method", "bad-request-line"],
)
async def test_malformed_request_gets_400_and_close(served: Served, garbage: bytes) -> None:
    client = await served.connect()
    await client.send(garbage)
    raw = await client.rest()  # read to EOF: the server must close
    head, _, body = raw.partition(b"\r\n\r\n")
    status, headers = parse_head(head + b"\r\n\r\n")
    assert (status, body) == (400, MALFORMED_BODY)
    assert (b"connection", b"close") in headers
    assert (b"content-type", JSON_TYPE.encode()) in headers
    other = await served.connect()
    [response] = await other.ask(get())
    assert (response.status, response.body) == (200, EMPTY_WEB)


async def test_valid_request_before_garbage_is_answered_first(web1: Client) -> None:
    await web1.send(get() + b"\x00\x01 nonsense\r\n\r\n")
    response = await web1.response()
    assert (response.status, response.body) == (200, EMPTY_WEB)
    rest = await web1.rest()
    assert rest.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert rest.endswith(b"\r\n\r\n" + MALFORMED_BODY)


async def test_malformed_reply_is_exact(web1: Client) -> None:
    # Regression: the canned 400 once announced content-length 28 for its 29-byte body.
    await web1.send(b"BREW / HTTP/1.1\r\n\r\n")
    response = await web1.response()
    assert response.raw == expected_bytes(response, b"400 Bad Request", MALFORMED_BODY, close=True)
    assert await web1.rest() == b""


async def test_upgrade_request_is_answered_once(web1: Client) -> None:
    # What ``curl --http2 http://...`` sends; a server may ignore Upgrade (RFC 9110 7.8).
    upgrade = get(
        NEWEST,
        ("Connection", "Upgrade, HTTP2-Settings"),
        ("Upgrade", "h2c"),
        ("HTTP2-Settings", "AAMAAABkAARAAAAAAAIAAAAA"),
    )
    [response] = await web1.ask(upgrade)
    assert (response.status, response.body) == (200, EMPTY_WEB)
    assert await web1.unsolicited() == b""


# -------------------------------------------------------------------- identity


async def test_source_address_identifies_the_vm(imds: Imds, served: Served) -> None:
    imds.submit("platform-reboot", "FrontEnd_IN_0")
    frontend = await served.connect(FRONTEND0)
    name, document = await frontend.ask(request(target=NAME_TARGET), get("2017-03-01"))
    assert name.body == b"FrontEnd_IN_0"
    assert document.body == (
        b'{"DocumentIncarnation":2,"Events":[{"EventId":"%s","EventStatus":"Scheduled",'
        b'"EventType":"Reboot","ResourceType":"VirtualMachine","Resources":["FrontEnd_IN_0"],'
        b'"NotBefore":"Tue, 14 Nov 2023 22:28:20 GMT"}]}' % event_id(1).encode()
    )
    [web] = await (await served.connect(WEB1)).ask(request(target=NAME_TARGET))
    assert web.body == b"web-1"


async def test_dedicated_port_answers_as_its_vm_whatever_the_source(
    make_imds: ImdsFactory, serve: Serve
) -> None:
    dedicated = bound_socket()
    port = dedicated.getsockname()[1]
    spec = fleet(
        {"kind": "standalone", "name": "a", "vms": [{"name": "a", "port": port}]},
        {"kind": "standalone", "name": "b", "vms": [{"name": "b"}]},
        default_vm="b",
    )
    imds = make_imds(spec)
    imds.submit("platform-reboot", "a")
    served = await serve(imds, [dedicated])
    asks = (request(target=NAME_TARGET), get())
    for source in ("127.1.0.1", "127.1.0.2", None):
        name, document = await (await served.connect(source, port)).ask(*asks)
        assert name.body == b"a"
        assert [e["Resources"] for e in json.loads(document.body)["Events"]] == [["a"]]
    name, document = await (await served.connect("127.1.0.2")).ask(*asks)
    assert name.body == b"b"
    assert json.loads(document.body)["Events"] == []


# ---------------------------------------------------------------- timing & flow


async def test_first_call_delay_holds_its_pipeline_only(
    make_imds: ImdsFactory, serve: Serve
) -> None:
    imds = make_imds(enablement="on-first-request", first_call_delay=0.3)
    imds.fabric.note_request(imds.fabric.topology.vms["workers_0"])  # enable "workers"
    served = await serve(imds)
    slow, fast = await served.connect(WEB1), await served.connect(WORKERS0)
    loop = asyncio.get_running_loop()
    sent = loop.time()
    await slow.send(get() + request(target=NAME_TARGET))
    held = asyncio.ensure_future(slow.responses(2))
    await fast.send(get())
    fast_reply = await fast.response()
    assert fast_reply.status == 200
    assert not held.done(), "another connection's reply waited for the first-call delay"
    document, name = await held
    assert loop.time() - sent >= 0.28
    assert (document.status, json.loads(document.body)["Events"]) == (200, [])
    assert name.body == b"web-1"
    assert imds.fabric.is_enabled("web")


@pytest.fixture
async def lazy(make_imds: ImdsFactory, serve: Serve) -> Served:
    """The demo fleet with faithful enablement and a 0.1 s first-call delay."""
    return await serve(make_imds(enablement="on-first-request", first_call_delay=0.1))


async def test_garbage_after_a_delayed_request_keeps_its_reply(lazy: Served) -> None:
    client = await lazy.connect(WEB1)
    await client.send(get() + b"\x00 nonsense\r\n\r\n")
    rest = await client.rest()
    assert lazy.imds.fabric.is_enabled("web")  # the request was served...
    assert rest.startswith(b"HTTP/1.1 200 OK\r\n")  # ...so its reply must be sent
    assert rest.endswith(b"\r\n\r\n" + MALFORMED_BODY)


async def test_half_close_during_the_first_call_delay_keeps_the_reply(lazy: Served) -> None:
    client = await lazy.connect(WEB1)
    await client.send(get())
    client.writer.write_eof()
    rest = await client.rest()
    assert rest.startswith(b"HTTP/1.1 200 OK\r\n"), rest


async def test_half_close_after_a_request_still_gets_the_reply(web1: Client) -> None:
    await web1.send(get())
    web1.writer.write_eof()
    response = await web1.response()
    assert (response.status, response.body) == (200, EMPTY_WEB)
    assert await web1.rest() == b""


async def test_back_pressure_with_2000_pipelined_requests(
    imds: Imds, serve: Serve, reboot_web0: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tiny socket buffers make the server's writes back up, so it must pause reading.
    pauses: list[int] = []
    pause_writing = Connection.pause_writing

    def spy(connection: Connection) -> None:
        pauses.append(1)
        pause_writing(connection)

    monkeypatch.setattr(Connection, "pause_writing", spy)
    served = await serve(imds, sndbuf=4096)
    client = await served.connect(WEB1, rcvbuf=4096)
    count = 2000
    versions = [VERSIONS[i % len(VERSIONS)] for i in range(count)]
    client.writer.write(b"".join(get(v) for v in versions))  # all sent before any read
    responses = await client.responses(count)
    await asyncio.wait_for(client.writer.drain(), TIMEOUT)
    assert [r.body for r in responses] == [reboot_document(v) for v in versions]
    assert {r.status for r in responses} == {200}
    assert pauses, "the server never had to apply back-pressure"
    await client.assert_open()


async def test_close_drops_idle_connections_and_stops_accepting(served: Served) -> None:
    idle = await served.connect()
    [response] = await idle.ask(get())
    assert response.status == 200
    never_asked = await served.connect()
    await asyncio.sleep(0.01)  # let the server accept it
    await asyncio.wait_for(served.server.close(), TIMEOUT)
    assert await idle.rest() == b""
    assert await never_asked.rest() == b""
    with pytest.raises(OSError):
        await served.connect()


async def test_rate_limit_applies_through_the_protocol(
    make_imds: ImdsFactory, serve: Serve
) -> None:
    served = await serve(make_imds(rate_limit=5.0))
    responses = await (await served.connect(WEB1)).ask(*[get()] * 6)
    assert [r.status for r in responses] == [200] * 5 + [429]
    throttled = responses[-1]
    assert throttled.raw == expected_bytes(throttled, b"429 Too Many Requests", RATE_BODY)
    [other] = await (await served.connect(WORKERS0)).ask(get())
    assert other.status == 200


# ------------------------------------------------------------ faults and limits


async def test_many_pipelined_upgrade_requests_are_each_answered_once(web1: Client) -> None:
    upgrade = get(NEWEST, ("Connection", "Upgrade"), ("Upgrade", "h2c"))
    responses = await web1.ask(*[upgrade] * 600)
    assert {(r.status, r.body) for r in responses} == {(200, EMPTY_WEB)}
    await web1.assert_open()


async def test_oversized_request_head_is_refused_with_431(web1: Client, served: Served) -> None:
    huge = get(NEWEST, ("X-Padding", "a" * (MAX_HEAD + 1024)))
    await web1.send(huge[: len(huge) - 4])  # the head never ends
    raw = await web1.rest()
    assert raw.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
    assert b"connection: close\r\n" in raw
    assert raw.endswith(b'{"error":"Request header fields too large"}')
    other = await served.connect(WORKERS0)
    [fine] = await other.ask(get())
    assert fine.status == 200


async def test_head_answers_carry_no_body_and_keep_framing(web1: Client) -> None:
    await web1.send(request("HEAD") + get())
    head = await asyncio.wait_for(web1.reader.readuntil(b"\r\n\r\n"), TIMEOUT)
    status, headers = parse_head(head)
    assert status == 405
    assert (b"content-length", b"0") in headers
    [after] = await web1.responses(1)
    assert (after.status, after.body) == (200, EMPTY_WEB)


async def test_a_server_fault_is_a_500_that_keeps_the_connection(
    imds: Imds, web1: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(scope_id: str) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(imds.fabric, "view", broken)
    [failed] = await web1.ask(get())
    assert failed.raw == expected_bytes(
        failed, b"500 Internal Server Error", b'{"error":"Internal server error"}'
    )
    monkeypatch.undo()
    [recovered] = await web1.ask(get())
    assert (recovered.status, recovered.body) == (200, EMPTY_WEB)


async def test_expect_100_continue_gets_its_interim_answer(
    imds: Imds, web1: Client, reboot_web0: str
) -> None:
    body = start_requests(reboot_web0)
    head = request("POST", headers=(("Metadata", "true"), ("Expect", "100-continue"),
                                    ("Content-Length", str(len(body)))))  # fmt: skip
    await web1.send(head)
    interim = await asyncio.wait_for(web1.reader.readuntil(b"\r\n\r\n"), TIMEOUT)
    assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
    await web1.send(body)
    [approved] = await web1.responses(1)
    assert (approved.status, approved.body) == (200, b"")
    assert imds.event(reboot_web0).approved_by == "web-1"


# ------------------------------------------------------------- deferred replies


class Deferring:
    """A stand-in endpoint (transports duck-type ``handle``): a path under ``/defer/`` is
    answered later, with whatever the test resolves its future to; any other path at once,
    with the path as body. It records every request it handled, in order."""

    def __init__(self) -> None:
        self.handled: list[str] = []
        self.futures: dict[str, asyncio.Future[Reply]] = {}

    def handle(self, request: Request) -> Reply:
        self.handled.append(request.path)
        if request.path.startswith("/defer/"):
            future = asyncio.get_running_loop().create_future()
            self.futures[request.path] = future
            return Reply(202, b"a placeholder nobody must see", wait=future)
        return Reply(200, request.path.encode(), content_type=TEXT)

    async def handled_at_least(self, count: int) -> None:
        """Wait (bounded) until ``count`` requests were handled."""
        async with asyncio.timeout(TIMEOUT):
            while len(self.handled) < count:
                await asyncio.sleep(0.005)


def plain(path: str) -> bytes:
    return request(target=path, headers=())


@pytest.fixture
def deferring() -> Deferring:
    return Deferring()


@pytest.fixture
async def on_deferring(serve: Serve, deferring: Deferring) -> Served:
    return await serve(deferring)


async def test_a_deferred_reply_holds_its_slot_and_everything_behind_it(
    on_deferring: Served, deferring: Deferring
) -> None:
    client = await on_deferring.connect()
    await client.send(plain("/defer/1") + plain("/a") + plain("/b"))
    await deferring.handled_at_least(1)
    assert await client.unsolicited() == b""  # no placeholder, nothing out of order
    assert deferring.handled == ["/defer/1"]  # those behind it are not even handled yet
    deferring.futures["/defer/1"].set_result(Reply(200, b"approved"))
    first, second, third = await client.responses(3)
    assert (first.status, first.body) == (200, b"approved")
    assert [second.body, third.body] == [b"/a", b"/b"]
    assert deferring.handled == ["/defer/1", "/a", "/b"]
    await client.assert_open()


async def test_other_connections_are_answered_while_one_waits(
    on_deferring: Served, deferring: Deferring
) -> None:
    waiting = await on_deferring.connect()
    await waiting.send(plain("/defer/1"))
    await deferring.handled_at_least(1)
    [other] = await (await on_deferring.connect(WORKERS0)).ask(plain("/other"))
    assert other.body == b"/other"
    deferring.futures["/defer/1"].set_result(Reply(200, b"late"))
    [late] = await waiting.responses(1)
    assert late.body == b"late"


async def test_the_resolved_reply_keeps_its_own_delay(
    on_deferring: Served, deferring: Deferring
) -> None:
    client = await on_deferring.connect()
    await client.send(plain("/defer/1") + plain("/after"))
    await deferring.handled_at_least(1)
    loop = asyncio.get_running_loop()
    resolved_at = loop.time()
    deferring.futures["/defer/1"].set_result(Reply(200, b"slow", delay=0.3))
    first, second = await client.responses(2)
    assert loop.time() - resolved_at >= 0.28
    assert (first.body, second.body) == (b"slow", b"/after")


async def test_a_store_failure_while_waiting_is_a_503_that_says_why(
    on_deferring: Served, deferring: Deferring
) -> None:
    client = await on_deferring.connect()
    await client.send(plain("/defer/1") + plain("/after"))
    await deferring.handled_at_least(1)
    deferring.futures["/defer/1"].set_exception(StoreUnavailable("the disk is full"))
    failed, after = await client.responses(2)
    assert failed.raw == expected_bytes(
        failed, b"503 Service Unavailable", b'{"error":"the disk is full"}'
    )
    assert after.body == b"/after"
    await client.assert_open()


async def test_any_other_failure_while_waiting_is_a_500(
    on_deferring: Served, deferring: Deferring, caplog: pytest.LogCaptureFixture
) -> None:
    client = await on_deferring.connect()
    await client.send(plain("/defer/1"))
    await deferring.handled_at_least(1)
    deferring.futures["/defer/1"].set_exception(RuntimeError("bug"))
    [failed] = await client.responses(1)
    assert failed.raw == expected_bytes(
        failed, b"500 Internal Server Error", b'{"error":"Internal server error"}'
    )
    assert any(r.exc_info and r.exc_info[1].args == ("bug",) for r in caplog.records)


async def test_nothing_is_read_while_a_reply_waits(
    on_deferring: Served, deferring: Deferring
) -> None:
    client = await on_deferring.connect()
    flood = b"x" * (16 << 20)  # far more than the socket buffers hold
    client.writer.write(plain("/defer/1") + plain("/a") + flood)
    await deferring.handled_at_least(1)
    with pytest.raises(TimeoutError):  # the server stopped reading: the flood cannot drain
        await asyncio.wait_for(client.writer.drain(), 0.5)
    assert deferring.handled == ["/defer/1"]
    deferring.futures["/defer/1"].set_result(Reply(200, b"approved"))
    first, second, malformed = await client.responses(3)  # then the garbage, in order
    assert (first.body, second.body) == (b"approved", b"/a")
    assert (malformed.status, malformed.body) == (400, MALFORMED_BODY)


async def test_a_client_gone_while_waiting_leaks_nothing(
    on_deferring: Served, deferring: Deferring, caplog: pytest.LogCaptureFixture
) -> None:
    client = await on_deferring.connect()
    await client.send(plain("/defer/1"))
    await deferring.handled_at_least(1)
    client.writer.transport.abort()  # gone, without a word
    await asyncio.sleep(0.05)
    assert on_deferring.server.deferred == 1  # the work behind the reply goes on
    deferring.futures["/defer/1"].set_result(Reply(200, b"nobody reads this"))
    async with asyncio.timeout(TIMEOUT):  # the reply finds the connection gone
        while on_deferring.server.connections or on_deferring.server.deferred:
            await asyncio.sleep(0.01)
    gc.collect()
    alive = [
        c for c in gc.get_objects() if isinstance(c, Connection) and c._shared.endpoint is deferring
    ]
    assert alive == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    [fine] = await (await on_deferring.connect()).ask(plain("/still-serving"))
    assert fine.body == b"/still-serving"


async def test_a_coroutine_wait_runs_to_the_end_even_if_the_client_left(
    serve: Serve,
) -> None:
    finished = asyncio.Event()
    release = asyncio.Event()

    async def durable() -> Reply:
        await release.wait()
        finished.set()
        return Reply(200, b"")

    class Coroutines:
        def handle(self, request: Request) -> Reply:
            return Reply(200, b"", wait=durable())

    served = await serve(Coroutines())
    client = await served.connect()
    await client.send(plain("/approve"))
    async with asyncio.timeout(TIMEOUT):
        while not served.server.deferred:
            await asyncio.sleep(0.005)
    client.writer.transport.abort()
    await asyncio.sleep(0.05)
    assert not finished.is_set()
    release.set()
    await asyncio.wait_for(finished.wait(), TIMEOUT)
    async with asyncio.timeout(TIMEOUT):
        while served.server.connections or served.server.deferred:
            await asyncio.sleep(0.01)


async def test_the_asgi_adapter_awaits_a_deferred_reply(imds: Imds) -> None:
    deferring = Deferring()
    imds.app.endpoint = deferring  # type: ignore[assignment]  # duck-typed stand-in

    async def resolve_soon(path: str, outcome: Reply | Exception) -> None:
        async with asyncio.timeout(TIMEOUT):
            while path not in deferring.futures:
                await asyncio.sleep(0.005)
        future = deferring.futures[path]
        if isinstance(outcome, Reply):
            future.set_result(outcome)
        else:
            future.set_exception(outcome)

    resolver = asyncio.ensure_future(resolve_soon("/defer/1", Reply(200, b"approved")))
    approved = await imds.raw(path="/defer/1")
    await resolver
    assert (approved.status, approved.body) == (200, b"approved")
    resolver = asyncio.ensure_future(resolve_soon("/defer/2", StoreUnavailable("disk full")))
    failed = await imds.raw(path="/defer/2")
    await resolver
    assert (failed.status, failed.body) == (503, b'{"error":"disk full"}')
