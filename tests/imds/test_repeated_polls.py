"""A poll a connection sends again byte for byte is answered without being parsed again
(``Endpoint.ticket``/``again``), and every CONTRACT rule still holds for it: the document
follows its scope, the api-version and headers of each request count, the rate limit
counts it, If-None-Match and 304 work, pipelined requests are answered in order, and the
request still counts as the VM's last poll.

Each request goes in a write of its own and its answer is read before the next is sent,
so the server reads each one alone: from the third on, the fast path answers them.
"""

from __future__ import annotations

import pytest

from forewarn.imds import endpoint as endpoint_module
from forewarn.imds import peers
from forewarn.imds.endpoint import Endpoint
from forewarn.imds.messages import Reply, Request, Ticket
from forewarn.store import SQLiteStore
from tests.imds.conftest import (
    BAD_VERSION_BODY,
    EMPTY_WEB,
    HEADER_BODY,
    NEWEST,
    NOT_FOUND_BODY,
    RATE_BODY,
    XFF_BODY,
    Imds,
    ImdsFactory,
    reboot_document,
)
from tests.imds.rawhttp import (
    WEB1,
    Client,
    Serve,
    Served,
    expected_bytes,
    get,
    request,
    serve,
    served,
    web1,
)
from tests.support.fabrics import T0

__all__ = ["serve", "served", "web1"]  # fixtures shared from rawhttp


async def one_by_one(client: Client, raw: bytes, count: int) -> list[tuple[int, bytes]]:
    """Send ``raw`` ``count`` times, each alone; the status and body of each answer."""
    out = []
    for _ in range(count):
        [response] = await client.ask(raw)
        out.append((response.status, response.body))
    return out


class Counting:
    """The real endpoint, counting which of its entry points the transport used."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.parsed: list[Request] = []
        self.tickets = 0
        self.again_calls = 0

    def handle(self, request: Request) -> Reply:
        self.parsed.append(request)
        return self.endpoint.handle(request)

    def ticket(self, request: Request) -> Ticket | None:
        self.tickets += 1
        return self.endpoint.ticket(request)

    def again(self, ticket: Ticket) -> Reply | None:
        self.again_calls += 1
        return self.endpoint.again(ticket)


async def test_a_repeated_poll_is_answered_unparsed_with_the_same_bytes(
    imds: Imds, serve: Serve
) -> None:
    counting = Counting(imds.app.endpoint)
    served = await serve(counting)
    client = await served.connect(WEB1)
    answers = [(await client.ask(get()))[0] for _ in range(6)]
    for response in answers:
        assert response.raw == expected_bytes(response, b"200 OK", EMPTY_WEB, b'etag: "1"')
    assert len(counting.parsed) == 2  # once seen, once more to take a ticket
    assert (counting.tickets, counting.again_calls) == (1, 4)
    await client.assert_open()


async def test_the_answer_follows_the_document(served: Served, imds: Imds) -> None:
    client = await served.connect(WEB1)
    assert await one_by_one(client, get(), 3) == [(200, EMPTY_WEB)] * 3
    imds.submit("platform-reboot", "web-0")
    [response] = await client.ask(get())
    assert response.raw == expected_bytes(
        response, b"200 OK", reboot_document(NEWEST), b'etag: "2"'
    )
    assert await one_by_one(client, get(), 2) == [(200, reboot_document(NEWEST))] * 2


async def test_each_api_version_gets_its_own_answer(served: Served, imds: Imds) -> None:
    imds.submit("platform-reboot", "web-0")
    client = await served.connect(WEB1)
    assert await one_by_one(client, get(NEWEST), 3) == [(200, reboot_document(NEWEST))] * 3
    old = reboot_document("2017-03-01")
    assert old != reboot_document(NEWEST)
    assert await one_by_one(client, get("2017-03-01"), 3) == [(200, old)] * 3
    assert await one_by_one(client, get("2099-01-01"), 3) == [(400, BAD_VERSION_BODY)] * 3
    assert await one_by_one(client, get(NEWEST), 1) == [(200, reboot_document(NEWEST))]


async def test_each_request_s_headers_count(served: Served) -> None:
    client = await served.connect(WEB1)
    assert await one_by_one(client, get(), 3) == [(200, EMPTY_WEB)] * 3
    no_header = request("GET", headers=())
    assert await one_by_one(client, no_header, 3) == [(400, HEADER_BODY)] * 3
    forwarded = get(NEWEST, ("X-Forwarded-For", "10.0.0.1"))
    assert await one_by_one(client, forwarded, 3) == [(400, XFF_BODY)] * 3
    wrong = request("GET", headers=(("Metadata", "false"),))
    assert await one_by_one(client, wrong, 3) == [(400, HEADER_BODY)] * 3
    assert await one_by_one(client, get(), 2) == [(200, EMPTY_WEB)] * 2


async def test_the_rate_limit_counts_repeated_polls(make_imds: ImdsFactory, serve: Serve) -> None:
    limited = make_imds(rate_limit=5.0)
    served = await serve(limited)
    client = await served.connect(WEB1)
    statuses = [status for status, _ in await one_by_one(client, get(), 8)]
    assert statuses == [200] * 5 + [429] * 3
    [response] = await client.ask(get())
    assert (response.status, response.body) == (429, RATE_BODY)
    other = await served.connect(limited.address("web-2"))  # another VM: its own bucket
    assert [s for s, _ in await one_by_one(other, get(), 3)] == [200] * 3


async def test_if_none_match_still_answers_304_then_the_new_document(
    served: Served, imds: Imds
) -> None:
    client = await served.connect(WEB1)
    conditional = get(NEWEST, ("If-None-Match", '"1"'))
    for _ in range(4):
        [response] = await client.ask(conditional)
        assert response.status == 304
        assert response.body == b""
        assert response.header("etag") == b'"1"'
    imds.submit("platform-reboot", "web-0")
    [response] = await client.ask(conditional)
    assert (response.status, response.body) == (200, reboot_document(NEWEST))
    assert response.header("etag") == b'"2"'


async def test_pipelined_repeats_are_answered_in_order(served: Served, imds: Imds) -> None:
    client = await served.connect(WEB1)
    assert await one_by_one(client, get(), 3) == [(200, EMPTY_WEB)] * 3
    responses = await client.ask(get(), get(), get("2099-01-01"), get())
    assert [(r.status, r.body) for r in responses] == [
        (200, EMPTY_WEB), (200, EMPTY_WEB), (400, BAD_VERSION_BODY), (200, EMPTY_WEB),
    ]  # fmt: skip
    raw = get()
    await client.send(raw[:7], raw[7:], pause=0.05)  # one request in two reads
    [split] = await client.responses(1)
    assert (split.status, split.body) == (200, EMPTY_WEB)
    imds.submit("platform-reboot", "web-0")
    assert await one_by_one(client, raw, 2) == [(200, reboot_document(NEWEST))] * 2
    await client.assert_open()


async def test_a_repeated_poll_is_the_vm_s_last_poll(served: Served, imds: Imds) -> None:
    client = await served.connect(WEB1)
    await one_by_one(client, get(), 3)
    assert imds.fabric.last_requests["web-1"] == T0
    imds.fabric.advance(42)
    await one_by_one(client, get(), 1)
    assert imds.fabric.last_requests["web-1"] == T0 + 42


# -- the same poll on a new connection (``Connection: close``, or one connection per poll)

CLOSE = ("Connection", "close")


async def poll_on_new_connections(
    served: Served, raw: bytes, count: int, source: str = WEB1
) -> list[tuple[int, bytes]]:
    """Send ``raw`` ``count`` times, each on a connection of its own from ``source``; the
    status and body of each answer. Each connection is closed by the server when ``raw``
    asks it to, else by the client."""
    out = []
    for _ in range(count):
        client = await served.connect(source)
        [response] = await client.ask(raw)
        if response.header("connection") == b"close":
            assert await client.rest() == b""  # the server closed after the answer
        else:
            client.writer.close()
        out.append((response.status, response.body))
    return out


async def test_a_poll_seen_on_another_connection_is_answered_unparsed(
    imds: Imds, serve: Serve
) -> None:
    counting = Counting(imds.app.endpoint)
    served = await serve(counting)
    first = await served.connect(WEB1)
    assert await one_by_one(first, get(), 2) == [(200, EMPTY_WEB)] * 2  # ticket taken
    second = await served.connect(WEB1)  # while the first is still open
    [response] = await second.ask(get())
    assert response.raw == expected_bytes(response, b"200 OK", EMPTY_WEB, b'etag: "1"')
    assert (len(counting.parsed), counting.tickets, counting.again_calls) == (2, 1, 1)
    await second.assert_open()
    await first.assert_open()


async def test_connection_close_polls_are_answered_unparsed_and_closed(
    imds: Imds, serve: Serve
) -> None:
    counting = Counting(imds.app.endpoint)
    served = await serve(counting)
    raw = get(NEWEST, CLOSE)
    for _ in range(5):
        client = await served.connect(WEB1)
        [response] = await client.ask(raw)
        assert response.raw == expected_bytes(
            response, b"200 OK", EMPTY_WEB, b'etag: "1"', close=True
        )
        assert await client.rest() == b""
    assert (len(counting.parsed), counting.tickets, counting.again_calls) == (2, 1, 3)
    # The same poll without ``Connection: close`` is other bytes: parsed, and kept open.
    client = await served.connect(WEB1)
    [response] = await client.ask(get())
    assert response.raw == expected_bytes(response, b"200 OK", EMPTY_WEB, b'etag: "1"')
    assert len(counting.parsed) == 3
    await client.assert_open()


async def test_http_1_0_polls_are_answered_unparsed_and_closed(imds: Imds, serve: Serve) -> None:
    counting = Counting(imds.app.endpoint)
    served = await serve(counting)
    raw = get(NEWEST, http="HTTP/1.0")
    assert await poll_on_new_connections(served, raw, 4) == [(200, EMPTY_WEB)] * 4
    assert (len(counting.parsed), counting.again_calls) == (2, 2)


async def test_another_address_or_other_bytes_are_parsed(imds: Imds, serve: Serve) -> None:
    counting = Counting(imds.app.endpoint)
    served = await serve(counting)
    raw = get(NEWEST, CLOSE)
    assert await poll_on_new_connections(served, raw, 3) == [(200, EMPTY_WEB)] * 3
    assert len(counting.parsed) == 2
    web2 = imds.address("web-2")  # the same bytes from another VM: its own document
    assert await poll_on_new_connections(served, raw, 1, web2) == [(200, EMPTY_WEB)]
    assert counting.parsed[-1].client == web2
    older = get("2017-03-01", CLOSE)  # other bytes from the same VM
    assert await poll_on_new_connections(served, older, 1) == [(200, EMPTY_WEB)]
    no_header = request("GET", headers=(CLOSE,))
    assert await poll_on_new_connections(served, no_header, 3) == [(400, HEADER_BODY)] * 3
    assert len(counting.parsed) == 7
    assert await poll_on_new_connections(served, raw, 1) == [(200, EMPTY_WEB)]
    assert len(counting.parsed) == 7  # the first poll's ticket is still good


async def test_the_rate_limit_counts_polls_across_connections(
    make_imds: ImdsFactory, serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the limiter's time held still: on a busy machine the polls below span more than the
    # 0.2 s in which 5/s earns a token back (CI's run saw a 200 where the 429 is owed)
    monkeypatch.setattr(endpoint_module, "monotonic", lambda: 1000.0)
    limited = make_imds(rate_limit=5.0)
    counting = Counting(limited.app.endpoint)
    served = await serve(counting)
    raw = get(NEWEST, CLOSE)
    statuses = [status for status, _ in await poll_on_new_connections(served, raw, 8)]
    assert statuses == [200] * 5 + [429] * 3
    assert counting.again_calls == 6  # the 429s too
    kept = await served.connect(WEB1)  # the same VM's bucket on a kept-alive connection
    [response] = await kept.ask(get())
    assert (response.status, response.body) == (429, RATE_BODY)


async def test_a_new_connection_gets_the_new_document(served: Served, imds: Imds) -> None:
    raw = get(NEWEST, CLOSE)
    assert await poll_on_new_connections(served, raw, 3) == [(200, EMPTY_WEB)] * 3
    imds.submit("platform-reboot", "web-0")
    client = await served.connect(WEB1)
    [response] = await client.ask(raw)
    assert response.raw == expected_bytes(
        response, b"200 OK", reboot_document(NEWEST), b'etag: "2"', close=True
    )
    assert await poll_on_new_connections(served, raw, 2) == [(200, reboot_document(NEWEST))] * 2
    imds.fabric.advance(42)
    await poll_on_new_connections(served, raw, 1)
    assert imds.fabric.last_requests["web-1"] == T0 + 42


async def test_past_the_address_bound_only_idle_addresses_are_forgotten(
    imds: Imds, serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(peers, "ADDRESSES", 2)
    counting = Counting(imds.app.endpoint)
    served = await serve(counting)
    raw = get(NEWEST, CLOSE)
    assert await poll_on_new_connections(served, raw, 3) == [(200, EMPTY_WEB)] * 3
    assert (len(counting.parsed), counting.tickets) == (2, 1)  # web-1 holds a ticket
    web2 = imds.address("web-2")
    held = await served.connect(web2)  # web-2 keeps a connection open
    assert await one_by_one(held, get(), 1) == [(200, EMPTY_WEB)]  # seen once
    # A third address: the table is full, so it forgets the addresses with nothing open.
    stranger = "127.1.0.250"
    assert await poll_on_new_connections(served, raw, 1, stranger) != []
    assert len(counting.parsed) == 4
    # web-1 was idle: forgotten, its next poll is parsed again (and seen once).
    assert await poll_on_new_connections(served, raw, 1) == [(200, EMPTY_WEB)]
    assert (len(counting.parsed), counting.tickets) == (5, 1)
    # web-2 had a connection open: it is still known, so its poll on a new connection is
    # the second one seen from there, and earns a ticket.
    other = await served.connect(web2)
    assert await one_by_one(other, get(), 1) == [(200, EMPTY_WEB)]
    assert (len(counting.parsed), counting.tickets) == (6, 2)
    await held.assert_open()


async def test_a_deleted_vm_s_repeated_poll_is_parsed_and_refused(imds: Imds, serve: Serve) -> None:
    counting = Counting(imds.app.endpoint)
    served = await serve(counting)
    vm = "workers_0"
    kept = await served.connect(imds.address(vm))
    raw = get(NEWEST)
    assert [s for s, _ in await one_by_one(kept, raw, 3)] == [200] * 3
    closing = get(NEWEST, CLOSE)
    statuses = await poll_on_new_connections(served, closing, 3, imds.address(vm))
    assert [s for s, _ in statuses] == [200] * 3
    assert counting.tickets == 2 and len(counting.parsed) == 4  # both answered unparsed
    imds.submit("spot-eviction", vm)
    imds.fabric.advance(30.0 + 60.0 + 1)  # notice, then the eviction itself: the VM is gone
    assert imds.fabric.is_deleted(vm)
    assert await one_by_one(kept, raw, 2) == [(404, NOT_FOUND_BODY)] * 2
    closed = await poll_on_new_connections(served, closing, 2, imds.address(vm))
    assert closed == [(404, NOT_FOUND_BODY)] * 2
    assert len(counting.parsed) == 8  # each one parsed again: no ticket answers a deleted VM


async def test_a_vm_deleted_after_a_reload_is_refused_too(
    make_imds: ImdsFactory, serve: Serve
) -> None:
    store = SQLiteStore(":memory:")
    imds = make_imds(store=store)
    served = await serve(imds)
    vm = "workers_0"
    kept = await served.connect(imds.address(vm))
    raw = get(NEWEST)
    assert [s for s, _ in await one_by_one(kept, raw, 3)] == [200] * 3
    imds.fabric.reload(store.load())  # what a follower does after missing changes
    imds.submit("spot-eviction", vm)
    imds.fabric.advance(30.0 + 60.0 + 1)
    assert imds.fabric.is_deleted(vm)
    assert await one_by_one(kept, raw, 2) == [(404, NOT_FOUND_BODY)] * 2
