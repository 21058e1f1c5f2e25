"""Fixtures of the client tests: forewarn in-process (ASGI, or loopback via the testing kit)
and as a real ``forewarn serve`` process, plus a fake clock for the retry rules."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from forewarn.fabric import Clock, OperationRequest
from forewarn.imds import ImdsApp, ImdsSettings
from forewarn.server import Runtime, ServeConfig, build_runtime
from tests.support.serverproc import VIRTUAL, ServerProcess

T0 = 1_700_000_000.0
BASE = "http://169.254.169.254"

#: Source addresses of some demo-fleet VMs (assigned in fleet order).
ADDRESS = {"web-0": "127.1.0.1", "web-1": "127.1.0.2", "workers_0": "127.1.0.7",
           "jumpbox": "127.1.0.11"}  # fmt: skip


@dataclass
class InProcess:
    """The demo fleet behind the endpoint's ASGI app, on a virtual clock at T0."""

    runtime: Runtime
    app: ImdsApp

    def transport(self, vm: str = "web-0") -> httpx.ASGITransport:
        """An ASGI transport whose requests come from ``vm``'s address."""
        return httpx.ASGITransport(app=self.app, client=(ADDRESS[vm], 50000))

    def submit(self, kind: str, *vms: str) -> list[str]:
        """Start ``kind`` on ``vms``; the ids of its events."""
        op = self.runtime.fabric.submit(OperationRequest(kind=kind, vms=vms))
        return list(op.event_ids)

    def complete(self, event_id: str) -> None:
        self.runtime.fabric.complete_event(event_id)


@pytest.fixture
def inproc(tmp_path: Path) -> Iterator[InProcess]:
    config = ServeConfig(db=str(tmp_path / "inproc.db"), clock="virtual", rate_limit=0,
                         enablement="always")  # fmt: skip
    runtime = build_runtime(config, clock=Clock.virtual(start=T0), threaded=False)
    try:
        yield InProcess(runtime, ImdsApp(runtime.fabric, ImdsSettings(rate_limit=None)))
    finally:
        runtime.close()


@pytest.fixture
def served(start_server: Callable[..., ServerProcess]) -> ServerProcess:
    """A real ``forewarn serve`` (demo fleet, virtual clock, every scope on, no rate limit)."""
    return start_server(VIRTUAL)


@dataclass
class FakeTime:
    """A monotonic clock that only the (fake) sleeps move, and the sleeps it saw."""

    now: float = 0.0
    sleeps: list[float] = field(default_factory=list)

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)


@pytest.fixture
def fake_time() -> FakeTime:
    return FakeTime()


@dataclass
class Script:
    """A MockTransport handler answering from a list of replies (the last one repeats)."""

    replies: list[httpx.Response | Exception]
    requests: list[httpx.Request] = field(default_factory=list)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        if isinstance(reply, Exception):
            raise reply
        return reply


def reply(status: int, body: bytes | dict[str, Any] = b"", **headers: str) -> httpx.Response:
    """One canned answer (a dict body is sent as compact JSON)."""
    if isinstance(body, dict):
        return httpx.Response(status, json=body, headers=headers)
    return httpx.Response(status, content=body, headers=headers)
