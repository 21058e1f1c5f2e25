"""Fixtures of the client tests: forewarn as a real ``forewarn serve`` process (in process,
the tests use the testing kit's ``forewarn`` fixture), canned replies, and a fake clock for
the retry rules."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from forewarn.client.core import Answer, RequestSpec
from tests.support.serverproc import VIRTUAL, ServerProcess

BASE = "http://169.254.169.254"

#: Source addresses of some demo-fleet VMs (assigned in fleet order).
ADDRESS = {"web-0": "127.1.0.1", "web-1": "127.1.0.2", "workers_0": "127.1.0.7",
           "jumpbox": "127.1.0.11"}  # fmt: skip


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

    replies: list[Answer | Exception]
    requests: list[RequestSpec] = field(default_factory=list)

    def __call__(self, request: RequestSpec) -> Answer:
        self.requests.append(request)
        reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        if isinstance(reply, Exception):
            raise reply
        return reply


def reply(status: int, body: bytes | dict[str, Any] = b"", **headers: str) -> Answer:
    """One canned answer (a dict body is sent as compact JSON)."""
    if isinstance(body, dict):
        body = json.dumps(body, separators=(",", ":")).encode()
        headers = {"content-type": "application/json", **headers}
    return Answer(status, headers, body, "")
