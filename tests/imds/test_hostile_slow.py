"""Slow and greedy clients on the metadata listener, over real sockets (issue 6, section 2).

Slowloris: a trickle of bytes must not keep a request open past its deadline (head, then
body), and one address must not take every connection the server can hold. The last test
runs the real ``forewarn serve`` with only 128 file descriptors and the default settings:
200 trickling connections from one VM must not cut the other VMs off.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from forewarn.imds import ImdsSettings, connection, protocol
from forewarn.imds.protocol import per_address_cap
from forewarn.server.config import ConfigError, ServeConfig
from tests.imds.conftest import EMPTY_WEB, Imds, ImdsFactory
from tests.imds.rawhttp import (
    HOST,
    TIMEOUT,
    WEB1,
    WORKERS0,
    Client,
    Serve,
    Served,
    expected_bytes,
    get,
    request,
    serve,
)
from tests.support.serverproc import ServerProcess

__all__ = ["serve"]  # fixture shared from rawhttp

TIMED_OUT_BODY = b'{"error":"Request not received in time"}'
#: Short deadlines, so that the tests take a second, not a minute.
QUICK = ImdsSettings(rate_limit=None, header_timeout=0.5, body_timeout=0.5)


async def trickle(client: Client, data: bytes, every: float) -> None:
    """Send ``data`` one byte at a time, until done or the server hangs up."""
    with contextlib.suppress(ConnectionError):
        for i in range(len(data)):
            client.writer.write(data[i : i + 1])
            await client.writer.drain()
            await asyncio.sleep(every)


@contextlib.asynccontextmanager
async def trickling(client: Client, data: bytes, every: float) -> AsyncIterator[None]:
    """``trickle`` in the background for the length of the block."""
    task = asyncio.ensure_future(trickle(client, data, every))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def assert_timed_out(client: Client) -> None:
    """408 with ``connection: close``, then the server closes."""
    response = await client.response()
    assert response.raw == expected_bytes(
        response, b"408 Request Timeout", TIMED_OUT_BODY, close=True
    )
    assert await client.rest() == b""


@pytest.fixture
async def quick(imds: Imds, serve: Serve) -> Served:
    """The demo fleet with half-second request deadlines."""
    return await serve(imds, settings=QUICK)


# -------------------------------------------------------------------- deadlines


async def test_a_trickled_head_gets_408_at_its_deadline(quick: Served) -> None:
    client = await quick.connect()
    # 0.1 s a byte: the head would take ~6 s, every byte well inside any idle timeout.
    async with trickling(client, get(), every=0.1):
        await assert_timed_out(client)


async def test_a_trickled_body_gets_408_at_its_deadline(quick: Served) -> None:
    client = await quick.connect()
    await client.send(request("POST", headers=(("Metadata", "true"), ("Content-Length", "60"))))
    async with trickling(client, b'{"StartRequests":[]}' + b" " * 40, every=0.1):
        await assert_timed_out(client)


async def test_a_connection_that_has_not_asked_yet_is_idle_not_late(
    imds: Imds, serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pools and load generators open connections before they ask: until its first byte, a
    # connection is idle (the idle timeout), not a late request (the head deadline).
    monkeypatch.setattr(connection, "IDLE_TIMEOUT", 2.5)  # whole seconds
    monkeypatch.setattr(protocol, "IDLE_SWEEP", 0.2)
    served = await serve(imds, settings=QUICK)
    client = await served.connect()
    await asyncio.sleep(1.0)  # twice the head deadline
    await client.assert_open()
    assert await asyncio.wait_for(client.reader.read(), 10.0) == b""  # then idle: closed


async def test_an_idle_keep_alive_connection_is_not_a_late_request(quick: Served) -> None:
    client = await quick.connect()
    [first] = await client.ask(get())
    await asyncio.sleep(1.0)  # twice the head deadline, between two requests
    await client.assert_open()
    [second] = await client.ask(get())
    assert (first.body, second.body) == (EMPTY_WEB, EMPTY_WEB)


async def test_crlfs_between_requests_do_not_keep_a_connection_alive(
    imds: Imds, serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    # llhttp skips CRLFs between requests: they start no request, so no deadline runs;
    # only a request may count as activity, or a CRLF a second would hold a slot for ever.
    monkeypatch.setattr(connection, "IDLE_TIMEOUT", 1.0)
    monkeypatch.setattr(protocol, "IDLE_SWEEP", 0.2)
    served = await serve(imds, settings=QUICK)
    client = await served.connect()
    [answer] = await client.ask(get())
    assert answer.status == 200
    async with trickling(client, b"\r\n" * 1000, every=0.1):
        assert await asyncio.wait_for(client.reader.read(), 10.0) == b""


async def test_a_head_sent_while_a_reply_was_held_is_not_late(
    make_imds: ImdsFactory, serve: Serve
) -> None:
    # The first call waits 1 s (Azure's first-call delay); meanwhile the server does not
    # read, so the next head, half sent, cannot be blamed for that second.
    imds = make_imds(enablement="on-first-request", first_call_delay=1.0)
    served = await serve(imds, settings=QUICK)
    client = await served.connect()
    second = get()
    await client.send(get() + second[:10])
    await asyncio.sleep(0.8)
    await client.send(second[10:])
    first, then = await client.responses(2)
    assert (first.status, then.status) == (200, 200)


# --------------------------------------------------------- per-address cap


async def test_one_address_cannot_take_every_connection(imds: Imds, serve: Serve) -> None:
    cap = 20
    served = await serve(imds, settings=ImdsSettings(rate_limit=None,
                                                     max_connections_per_address=cap))  # fmt: skip
    assert served.server.per_address_cap == cap
    slow = [await served.connect(WEB1) for _ in range(200)]
    async with contextlib.AsyncExitStack() as stack:
        for client in slow:
            await stack.enter_async_context(trickling(client, get(), every=1.0))
        closed = await asyncio.gather(*(closed_at_once(c) for c in slow))
        assert closed.count(False) == cap  # the first 20 are being served, slowly
        assert closed.count(True) == 200 - cap  # the others were closed before a byte
        # Another VM is answered at once, over and over, while web-1 hogs its share.
        for _ in range(3):
            vm = await served.connect(WORKERS0)
            [fine] = await vm.ask(get())
            assert (fine.status, fine.body) == (200, EMPTY_WEB)
        assert await closed_at_once(await served.connect(WEB1))
    for client in slow:
        client.writer.close()
    async with asyncio.timeout(TIMEOUT):  # web-1's slots are given back
        while served.server.connections > 3:
            await asyncio.sleep(0.01)
    [again] = await (await served.connect(WEB1)).ask(get())
    assert again.status == 200


async def closed_at_once(client: Client) -> bool:
    """True if the server closed the connection without a word (within a moment)."""
    try:
        return await asyncio.wait_for(client.reader.read(1), 0.5) == b""
    except TimeoutError:
        return False


# ------------------------------------------- the real server, 128 descriptors

_LIMITED = (
    "import os, resource, sys\n"
    "resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'forewarn', *sys.argv[1:]])\n"
)


class LimitedServer(ServerProcess):
    """``forewarn serve`` allowed 128 open files (soft and hard)."""

    def command(self) -> list[str]:
        command = super().command()
        assert command[1:3] == ["-m", "forewarn"]
        return [sys.executable, "-c", _LIMITED, *command[3:]]


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[LimitedServer]:
    server = LimitedServer(tmp_path / "fd.db").start()
    try:
        yield server
    finally:
        server.stop()


def _raise_own_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed <= hard or (soft < needed and hard == resource.RLIM_INFINITY):
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


async def test_200_trickling_connections_do_not_cut_off_other_vms(
    limited: LimitedServer,
) -> None:
    _raise_own_limit(1024)  # this test's own 200+ sockets
    loop = asyncio.get_running_loop()

    async def connect(source: str) -> Client:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind((source, 0))
        sock.setblocking(False)
        await asyncio.wait_for(loop.sock_connect(sock, (HOST, limited.imds_port)), TIMEOUT)
        reader, writer = await asyncio.open_connection(sock=sock)
        return Client(reader, writer)

    slow = [await connect(WEB1) for _ in range(200)]  # web-1, one byte a second each
    async with contextlib.AsyncExitStack() as stack:
        for client in slow:
            await stack.enter_async_context(trickling(client, get(), every=1.0))
        await asyncio.sleep(1.5)
        for _ in range(3):  # workers_0 polls, and is answered every time
            vm = await connect(WORKERS0)
            [answer] = await vm.ask(get())
            assert answer.status == 200, answer.raw
            assert answer.body.startswith(b'{"DocumentIncarnation":'), answer.raw
            vm.writer.close()
            await asyncio.sleep(0.5)
    for client in slow:
        client.writer.close()
    assert limited.proc is not None and limited.proc.poll() is None, "the server died"


# ------------------------------------------------------- serve options, end to end


@pytest.fixture
def strict(tmp_path: Path) -> Iterator[ServerProcess]:
    """``forewarn serve`` with a short head deadline and at most 3 connections an address."""
    args = ["--imds-header-timeout", "0.5", "--imds-max-connections-per-address", "3"]
    server = ServerProcess(tmp_path / "strict.db", args).start()
    try:
        yield server
    finally:
        server.stop()


async def test_serve_options_set_the_deadline_and_the_cap(strict: ServerProcess) -> None:
    loop = asyncio.get_running_loop()

    async def connect() -> Client:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind((WEB1, 0))
        sock.setblocking(False)
        await asyncio.wait_for(loop.sock_connect(sock, (HOST, strict.imds_port)), TIMEOUT)
        reader, writer = await asyncio.open_connection(sock=sock)
        return Client(reader, writer)

    first, second, third = [await connect() for _ in range(3)]
    fourth = await connect()
    assert await closed_at_once(fourth)
    async with trickling(first, get(), every=0.1):
        await assert_timed_out(first)
    for client in (first, second, third, fourth):
        client.writer.close()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("imds_header_timeout", 0.0, "--imds-header-timeout must be a positive"),
        ("imds_body_timeout", float("inf"), "--imds-body-timeout must be a positive"),
        ("imds_body_timeout", -1.0, "--imds-body-timeout must be a positive"),
        ("imds_max_connections_per_address", 0, "--imds-max-connections-per-address"),
    ],
)
def test_defence_settings_are_checked(field: str, value: float, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ServeConfig(**{field: value})


def test_the_cap_never_exceeds_a_quarter_of_the_open_files() -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    unlimited = soft == resource.RLIM_INFINITY
    assert per_address_cap(10**9) == (10**9 if unlimited else max(1, soft // 4))
    assert per_address_cap(3) == 3
