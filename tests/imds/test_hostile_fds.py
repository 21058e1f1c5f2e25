"""Slow connections from many addresses cannot take the descriptors every VM needs (issue 16).

The per-address cap stops one address; here each of 200 addresses holds one connection
that sent one byte of a request, against a real ``forewarn serve`` whose open-file limit is
128 (soft and hard: the server raises the soft limit to the hard one). Without room kept,
every new connection was refused until the head deadline (10 s) ended the slow ones. Which
connections make room is checked on the in-process server: the slowest requests, then the
longest idle, and a VM's kept-alive connection last.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.imds.rawhttp import Client, Served, get, serve, served
from tests.support.crowd import Crowd
from tests.support.serverproc import ServerProcess

__all__ = ["serve", "served"]  # fixtures shared from rawhttp

OPEN_FILES = 128
ATTACKERS = 200
WEB1 = "127.1.0.2"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    proc = ServerProcess(
        tmp_path / "fd.db", ["--enablement", "always"], open_files=OPEN_FILES
    ).start(timeout=60)
    yield proc
    proc.stop()


def test_200_slow_connections_from_200_addresses_leave_room_for_a_vm(
    server: ServerProcess,
) -> None:
    attack = Crowd(server.imds_port, 9, ATTACKERS, first=b"G", reconnect=True).start()
    try:
        time.sleep(0.5)  # the server has taken in what it will of the 200
        held = len(attack.sockets)
        started = time.monotonic()
        answers = []
        for _ in range(5):  # a fresh connection each time: what a new VM does
            answers.append(server.imds(vm_address=WEB1).status_code)
            time.sleep(0.2)
        took = time.monotonic() - started
    finally:
        attack.stop()
    assert answers == [200] * 5  # not one refused (before: every one for about 10 s)
    assert took < 8.0, took  # 5 polls and 1 s of pauses; generous for a loaded machine
    assert held >= OPEN_FILES // 2  # the attack did hold most descriptors
    assert attack.closed > 0  # room was made by closing slow connections
    assert any("file descriptors run short" in line for line in server.banner)


# ------------------------------------------------ which connections make room


async def test_room_is_made_from_slow_requests_first_then_the_longest_idle(
    served: Served,
) -> None:
    room = served.server.room
    assert room is not None
    idle_long = await served.connect("127.9.1.1")  # connected, never asked
    await asyncio.sleep(1.1)  # idle times are kept in whole seconds
    vm = await served.connect(WEB1)
    # A VM that polled (twice: a request is stamped with the second of the last reply
    # written, which the first one brings up to date) and keeps its connection.
    for _ in range(2):
        [polled] = await vm.ask(get())
        assert polled.status == 200
    slowest = await served.connect("127.9.1.2")
    await slowest.send(b"G")  # one byte of a head: its deadline comes first
    await asyncio.sleep(0.05)
    slow = await served.connect("127.9.1.3")
    await slow.send(b"GET /metadata")
    await asyncio.sleep(0.05)

    room.batch = 1
    newcomer = object()  # a connection just accepted (never shed for itself)
    # As if its descriptor were the threshold: room for it and one more (``batch``).
    assert room.make(newcomer, room.threshold, 0.0) == 2  # type: ignore[arg-type]
    assert [await closed(c) for c in (slowest, slow, idle_long, vm)] == [
        True, True, False, False]  # fmt: skip
    assert room.make(newcomer, room.threshold - 1, 0.0) == 1  # type: ignore[arg-type]
    assert [await closed(c) for c in (idle_long, vm)] == [True, False]
    [again] = await vm.ask(get())  # the VM's connection was kept
    assert again.status == 200


async def closed(client: Client) -> bool:
    """True if the server closed ``client`` (within a moment)."""
    try:
        return await asyncio.wait_for(client.reader.read(1), 1.0) == b""
    except TimeoutError:
        return False
