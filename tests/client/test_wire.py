"""The clients' own HTTP/1.1 (the async ``forewarn.client.wire``, the blocking
``syncwire``) against servers on real sockets that answer as endpoints and proxies do:
one kept-alive connection for a watch, a 304 that keeps the document, chunks, a
connection the server closed while idle, ``Connection: close`` and HTTP/1.0 bodies to the
close, garbage, silence; and the agent's client never imports httpx."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import pytest

from forewarn.client import (
    AsyncScheduledEventsClient,
    Document,
    DocumentChange,
    EndpointTimeout,
    EndpointUnreachable,
    ScheduledEventsClient,
)
from tests.client.conftest import ADDRESS
from tests.support.serverproc import ServerProcess

DOCUMENT = json.dumps({"DocumentIncarnation": 3, "Events": []}).encode()

#: Answers a request head (bytes) with raw response bytes (None: close without a word).
Answerer = Callable[[bytes], bytes | None]


def ok(body: bytes = DOCUMENT, *extra: str) -> bytes:
    head = ["HTTP/1.1 200 OK", 'ETag: "3"', f"Content-Length: {len(body)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def conditional(request: bytes) -> bytes:
    if b'if-none-match: "3"' in request.lower():
        return b'HTTP/1.1 304 Not Modified\r\nETag: "3"\r\n\r\n'
    return ok()


class Endpoint:
    """A raw asyncio server: its connections, the requests it read, and how it answers."""

    def __init__(self, answer: Answerer) -> None:
        self.answer = answer
        self.connections = 0
        self.requests: list[bytes] = []
        self.writers: list[asyncio.StreamWriter] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.requests.append(head)
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        await reader.readexactly(int(line.split(b":")[1]))
                response = self.answer(head)
                if response is None:
                    break
                writer.write(response)
                await writer.drain()
                if response.startswith(b"HTTP/1.0") or b"Connection: close" in response:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


@asynccontextmanager
async def endpoint(answer: Answerer) -> AsyncIterator[tuple[Endpoint, str]]:
    state = Endpoint(answer)
    server = await asyncio.start_server(state.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield state, f"http://127.0.0.1:{port}"
    finally:
        server.close()
        for writer in state.writers:
            writer.close()


def client(url: str, **options: object) -> AsyncScheduledEventsClient:
    return AsyncScheduledEventsClient(url, max_retries=0, **options)  # type: ignore[arg-type]


class Blocking:
    """The blocking twin (``syncwire``) behind the async twin's calls: each call runs on a
    thread, so the endpoint's event loop keeps serving meanwhile."""

    def __init__(self, url: str, **options: Any) -> None:
        self._client = ScheduledEventsClient(url, max_retries=0, **options)

    async def get(self) -> Document:
        return await asyncio.to_thread(self._client.get)

    async def poll(self, previous: Document | None = None) -> DocumentChange:
        return await asyncio.to_thread(self._client.poll, previous)

    async def approve(self, *event_ids: str) -> None:
        await asyncio.to_thread(self._client.approve, *event_ids)

    async def __aenter__(self) -> Blocking:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._client.close()


#: Each twin's client of ``url``: the async one (the agent's) and the blocking one (the VM
#: commands'), each with its own HTTP/1.1.
TWINS = {"async": client, "blocking": Blocking}


@pytest.fixture(params=sorted(TWINS))
def twin(request: pytest.FixtureRequest) -> Callable[..., Any]:
    return TWINS[request.param]


async def test_a_watch_polls_on_one_connection_and_a_304_keeps_the_document(
    twin: Callable[..., Any],
) -> None:
    async with endpoint(conditional) as (served, url):
        seen: list[int | None] = []
        options = {"observer": seen.append} if twin is client else {}
        async with twin(url, **options) as c:
            first = await c.get()
            unchanged = await c.poll(first)
            again = await c.poll(first)
    assert first.incarnation == 3 and first.etag is not None
    assert not unchanged and not again  # nothing changed
    if twin is client:
        assert seen == [200, 304, 304]
    assert served.connections == 1
    assert [b'If-None-Match: "3"' in r for r in served.requests] == [False, True, True]
    assert all(r.startswith(b"GET /metadata/scheduledevents?api-version=") for r in served.requests)


async def test_a_chunked_document_is_read_whole(twin: Callable[..., Any]) -> None:
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (DOCUMENT[:7], DOCUMENT[7:]))
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"
    async with endpoint(lambda _: answer) as (served, url), twin(url) as c:
        assert (await c.get()).incarnation == 3
        assert (await c.get()).incarnation == 3  # the connection is usable after it
    assert served.connections == 1


async def test_an_interim_answer_is_skipped_and_headers_are_read_in_any_case(
    twin: Callable[..., Any],
) -> None:
    def shouting(request: bytes) -> bytes:
        if b"if-none-match" in request.lower():  # a 304 has no body, whatever it says
            return b'HTTP/1.1 304 Not Modified\r\nETAG: "3"\r\ncOnNeCtIoN: CLOSE\r\n\r\n'
        head = b'HTTP/1.1 200 OK\r\nCONTENT-LENGTH: %d\r\nETag: "3"\r\n\r\n' % len(DOCUMENT)
        return b"HTTP/1.1 100 Continue\r\n\r\n" + head + DOCUMENT

    async with endpoint(shouting) as (served, url), twin(url) as c:
        first = await c.get()
        assert first.incarnation == 3 and first.etag == '"3"'
        assert not await c.poll(first)
        assert not await c.poll(first)  # on a new connection: the last one said close
    assert served.connections == 2


async def test_a_connection_the_server_closed_while_idle_is_replaced(
    twin: Callable[..., Any],
) -> None:
    async with endpoint(conditional) as (served, url), twin(url) as c:
        await c.get()
        for writer in served.writers:  # the server's keep-alive time-out
            writer.close()
        await asyncio.sleep(0.05)
        assert (await c.get()).incarnation == 3
    assert served.connections == 2


async def test_connection_close_and_a_body_to_the_close_are_understood(
    twin: Callable[..., Any],
) -> None:
    closing = ok(DOCUMENT, "Connection: close")
    async with endpoint(lambda _: closing) as (served, url), twin(url) as c:
        assert (await c.get()).incarnation == 3
        assert (await c.get()).incarnation == 3
    assert served.connections == 2
    unframed = b"HTTP/1.0 200 OK\r\n\r\n" + DOCUMENT
    async with endpoint(lambda _: unframed) as (served, url), twin(url) as c:
        assert (await c.get()).incarnation == 3
        assert (await c.get()).incarnation == 3
    assert served.connections == 2


@pytest.mark.parametrize(
    "answer",
    [
        b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
        None,
        b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nConnection: close\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\nContent-Length: \u00b2\r\n\r\n{}".encode("latin-1"),
        "HTTP/1.1 2\u00b20 OK\r\nContent-Length: 2\r\n\r\n{}".encode("latin-1"),
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-2\r\n{}\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffff\r\n{}",
    ],
    ids=[
        "not-http",
        "closed",
        "short-body",
        "superscript-length",
        "superscript-status",
        "negative-chunk",
        "chunk-over-the-bound",
    ],
)
async def test_a_broken_answer_is_an_unreachable_endpoint(
    answer: bytes | None, twin: Callable[..., Any]
) -> None:
    def once(_: bytes) -> bytes | None:
        return answer

    async with endpoint(once) as (_, url):
        seen: list[int | None] = []
        options = {"observer": seen.append} if twin is client else {}
        async with twin(url, timeout=5, first_call_timeout=5, **options) as c:
            with pytest.raises(EndpointUnreachable) as caught:
                await c.get()
    assert "/metadata/scheduledevents" in caught.value.url
    assert not isinstance(caught.value, EndpointTimeout)  # said at once, not waited out
    if twin is client:
        assert seen == [None]


async def test_silence_is_a_timeout(twin: Callable[..., Any]) -> None:
    async def never(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)
        await asyncio.sleep(30)

    server = await asyncio.start_server(never, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        async with twin(url, timeout=0.2, first_call_timeout=0.2) as c:
            with pytest.raises(EndpointTimeout):
                await c.get()
    finally:
        server.close()


def test_the_async_client_and_the_agent_load_no_httpx() -> None:
    code = (
        "import sys, forewarn.client, forewarn.agent.daemon, forewarn.vm.parser\n"
        "print(sorted(m for m in ('httpx', 'rich', 'prometheus_client') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_without_an_etag_the_same_bytes_are_no_news_and_new_bytes_are() -> None:
    event = {"EventId": "5f1c1a1e-0000-4000-8000-000000000000", "EventStatus": "Scheduled",
             "EventType": "Reboot", "ResourceType": "VirtualMachine", "Resources": ["web-0"],
             "NotBefore": "Mon, 19 Sep 2033 18:29:47 GMT", "Description": "",
             "EventSource": "Platform", "DurationInSeconds": -1}  # fmt: skip
    changed = json.dumps({"DocumentIncarnation": 4, "Events": [event]}).encode()
    bodies = [DOCUMENT, DOCUMENT, changed]

    def plain(request: bytes) -> bytes:  # no ETag: a whole document every time
        body = bodies.pop(0) if len(bodies) > 1 else bodies[0]
        return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)

    async with endpoint(plain) as (served, url), client(url) as c:
        recorded: list[bytes] = []
        changes = c.watch(0, on_document=lambda document, body: recorded.append(body))
        first = await anext(changes)
        second = await anext(changes)  # the same bytes were skipped; these are new
        await changes.aclose()
    assert first.document.incarnation == 3
    assert second.document.incarnation == 4 and second.previous is not None
    assert [e.event_id for e in second.added] == [event["EventId"]]
    assert second.previous.incarnation == 3
    assert len(served.requests) == 3 and recorded == [DOCUMENT, DOCUMENT, changed]
    assert not any(b"If-None-Match" in r for r in served.requests)


EVENT_ID = "5f1c1a1e-0000-4000-8000-000000000000"


class KeepAliveTimeout(BaseHTTPRequestHandler):
    """The standard library's own HTTP/1.1 server, ending a kept-alive connection after
    0.2 s idle (as uvicorn's and proxies' keep-alive time-outs do)."""

    protocol_version = "HTTP/1.1"
    timeout = 0.2
    connections: list[str]
    approvals: list[bytes]

    def setup(self) -> None:
        super().setup()
        self.connections.append(self.address_string())

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(DOCUMENT)))
        self.end_headers()
        self.wfile.write(DOCUMENT)

    def do_POST(self) -> None:
        self.approvals.append(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


async def test_a_real_server_that_ends_idle_connections_loses_no_poll_and_no_approval(
    twin: Callable[..., Any],
) -> None:
    handler = type("Handler", (KeepAliveTimeout,), {"connections": [], "approvals": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        async with twin(f"http://127.0.0.1:{server.server_address[1]}") as c:
            first = await c.get()
            await asyncio.sleep(0.5)  # the server ends the idle connection
            assert (await c.poll(first)).document.incarnation == 3
            await asyncio.sleep(0.5)
            await c.approve(EVENT_ID)  # not lost, nor an error: never sent on the dead one
    finally:
        server.shutdown()
        server.server_close()
    assert len(handler.connections) == 3
    assert [json.loads(a) for a in handler.approvals] == [
        {"StartRequests": [{"EventId": EVENT_ID}]}
    ]


async def test_a_connection_closed_as_the_request_went_out_resends_a_get_not_a_post(
    twin: Callable[..., Any],
) -> None:
    def close_the_second(request: bytes) -> bytes | None:
        return None if len(served.requests) in (2, 4) else ok()

    async with endpoint(close_the_second) as (served, url), twin(url) as c:
        await c.get()
        assert (await c.get()).incarnation == 3  # the GET sent again on a new connection
        assert served.connections == 2 and len(served.requests) == 3
        with pytest.raises(EndpointUnreachable):
            await c.approve(EVENT_ID)  # it may have been applied: never sent twice
    assert [r.split(b" ")[0] for r in served.requests] == [b"GET", b"GET", b"GET", b"POST"]


async def test_a_trickling_answer_is_a_timeout(twin: Callable[..., Any]) -> None:
    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
        try:
            for _ in range(100):  # a byte at a time, each well within the time-out
                writer.write(b" ")
                await writer.drain()
                await asyncio.sleep(0.05)
        except (ConnectionError, asyncio.CancelledError):
            pass  # the client gave up
        finally:
            writer.close()

    server = await asyncio.start_server(trickle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    start = time.monotonic()
    try:
        async with twin(url, timeout=0.5, first_call_timeout=0.5) as c:
            with pytest.raises(EndpointTimeout):
                await c.get()
    finally:
        server.close()
    assert time.monotonic() - start < 2.5  # the whole answer had 0.5 s, not each byte


async def test_against_a_forewarn_serve_process_a_watch_approves_and_sees_it_start(
    twin: Callable[..., Any], served: ServerProcess
) -> None:
    op = served.control("POST", "/api/v1/operations",
                        json={"kind": "user-reboot", "target": "web-1"}).json()  # fmt: skip
    (event_id,) = op["event_ids"]
    async with twin(served.imds_url, local_address=ADDRESS["web-1"]) as c:
        first = await c.get()
        assert [e.event_id for e in first.events] == [event_id] and first.etag is not None
        assert not await c.poll(first)  # a 304 on the kept-alive connection
        await c.approve(event_id)
        change = await c.poll(first)
    assert change.document.incarnation > first.incarnation
    (started,) = change.document.events
    assert started.event_id == event_id and started.started
    assert served.control("GET", f"/api/v1/events/{event_id}").json()["status"] == "Started"
