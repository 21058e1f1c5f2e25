"""The retry rules: 410 for up to 70 s, 429 and 5xx with jittered back-off, refused
connections; on a fake clock (no real waiting), and against a real server where it counts."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest

from forewarn.client import (
    AsyncScheduledEventsClient,
    BadRequestError,
    EndpointTimeout,
    EndpointUnreachable,
    GoneError,
    MockTransport,
    NotFoundError,
    RateLimitedError,
    ScheduledEventsClient,
    ServerError,
)
from forewarn.client.core import Answer, RequestSpec
from tests.client.conftest import ADDRESS, BASE, FakeTime, Script, reply
from tests.support.serverproc import ServerProcess, free_port

EMPTY = {"DocumentIncarnation": 1, "Events": []}
GONE = b'{"error":"Gone"}'
BUSY = b'{"error":"Too many requests"}'
BROKEN = b'{"error":"Internal server error"}'


def _client(
    handler: Callable[[RequestSpec], Answer], fake: FakeTime, **options: object
) -> ScheduledEventsClient:
    return ScheduledEventsClient(
        BASE, transport=MockTransport(handler), sleep=fake.sleep, clock=fake.clock,
        **options,  # type: ignore[arg-type]
    )  # fmt: skip


def _gone_until(fake: FakeTime, seconds: float, calls: list[float]) -> Callable[..., Answer]:
    def handler(request: RequestSpec) -> Answer:
        calls.append(fake.now)
        return reply(410, GONE) if fake.now < seconds else reply(200, EMPTY)

    return handler


def test_410_is_retried_until_the_endpoint_is_ready(fake_time: FakeTime) -> None:
    calls: list[float] = []
    with _client(_gone_until(fake_time, 60.0, calls), fake_time) as client:
        assert client.get().incarnation == 1
    assert calls[-1] >= 60.0  # it kept asking through a minute of 410s
    assert len(calls) == len(fake_time.sleeps) + 1
    assert max(fake_time.sleeps) <= 1.5  # short steps: ready is noticed quickly


def test_410_gives_up_after_70_seconds(fake_time: FakeTime) -> None:
    calls: list[float] = []
    client = _client(_gone_until(fake_time, float("inf"), calls), fake_time)
    with client, pytest.raises(GoneError) as caught:
        client.get()
    assert (caught.value.status, caught.value.body) == (410, GONE)
    assert 70.0 <= fake_time.now <= 70.0 + 1e-6  # the last wait is trimmed to the window
    assert calls[-1] == pytest.approx(70.0)
    assert len(calls) >= 47  # about one request a second


def test_410_window_is_configurable(fake_time: FakeTime) -> None:
    calls: list[float] = []
    client = _client(_gone_until(fake_time, float("inf"), calls), fake_time,
                 retry_gone_for=0)  # fmt: skip
    with client, pytest.raises(GoneError):
        client.get()
    assert calls == [0.0] and fake_time.sleeps == []


def test_429_backs_off_exponentially_with_jitter(fake_time: FakeTime) -> None:
    script = Script([reply(429, BUSY), reply(429, BUSY), reply(429, BUSY), reply(200, EMPTY)])
    with _client(script, fake_time, jitter=lambda: 0.999) as client:
        assert client.get().incarnation == 1
    assert len(script.requests) == 4
    assert fake_time.sleeps == pytest.approx([0.4995, 0.999, 1.998])  # 0.5, 1, 2 s ceilings


def test_jitter_spreads_waits_below_the_ceiling(fake_time: FakeTime) -> None:
    draws = iter([0.0, 0.5])
    script = Script([reply(503, BROKEN), reply(503, BROKEN), reply(200, EMPTY)])
    with _client(script, fake_time, jitter=lambda: next(draws)) as client:
        client.get()
    assert fake_time.sleeps == pytest.approx([0.0, 0.5])


def test_429_retry_after_is_honoured(fake_time: FakeTime) -> None:
    script = Script([reply(429, BUSY, **{"Retry-After": "3"}), reply(200, EMPTY)])
    with _client(script, fake_time, jitter=lambda: 0.0) as client:
        client.get()
    assert fake_time.sleeps == [3.0]


def test_429_gives_up_after_max_retries(fake_time: FakeTime) -> None:
    script = Script([reply(429, BUSY)])
    client = _client(script, fake_time, max_retries=2)
    with client, pytest.raises(RateLimitedError) as caught:
        client.get()
    assert len(script.requests) == 3
    assert (caught.value.status, caught.value.body) == (429, BUSY)
    assert caught.value.error == "Too many requests"


def test_500_gives_up_after_max_retries_with_capped_waits(fake_time: FakeTime) -> None:
    script = Script([reply(500, BROKEN)])
    client = _client(script, fake_time, jitter=lambda: 0.999, backoff_max=2.0)
    with client, pytest.raises(ServerError) as caught:
        client.approve("E1")
    assert len(script.requests) == 6  # the first try and five retries (the default)
    assert max(fake_time.sleeps) <= 2.0
    assert (caught.value.status, caught.value.body) == (500, BROKEN)
    # a retried approval is the same request every time (approving twice is harmless)
    assert {r.content for r in script.requests} == {b'{"StartRequests":[{"EventId":"E1"}]}'}


@pytest.mark.parametrize(("status", "error"), [(400, BadRequestError), (404, NotFoundError)])
def test_client_errors_are_not_retried(
    fake_time: FakeTime, status: int, error: type[Exception]
) -> None:
    script = Script([reply(status, b'{"error":"no"}')])
    client = _client(script, fake_time)
    with client, pytest.raises(error):
        client.get()
    assert len(script.requests) == 1 and fake_time.sleeps == []


def test_a_dropped_connection_is_retried(fake_time: FakeTime) -> None:
    script = Script(
        [ConnectionRefusedError("refused"), ConnectionResetError("reset"), reply(200, EMPTY)]
    )
    with _client(script, fake_time) as client:
        assert client.get().incarnation == 1
    assert len(fake_time.sleeps) == 2


def test_a_time_out_is_reported_at_once(fake_time: FakeTime) -> None:
    script = Script([TimeoutError("timed out"), reply(200, EMPTY)])
    client = _client(script, fake_time)
    with client, pytest.raises(EndpointTimeout) as caught:
        client.get()
    assert len(script.requests) == 1 and fake_time.sleeps == []  # a time-out is final
    assert caught.value.url == BASE + "/metadata/scheduledevents?api-version=2020-07-01"


def test_connection_refused_is_retried_then_reported(fake_time: FakeTime) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nobody listens there
    client = ScheduledEventsClient(url, sleep=fake_time.sleep, clock=fake_time.clock,
                                   max_retries=3)  # fmt: skip
    with client, pytest.raises(EndpointUnreachable) as caught:
        client.get()
    assert len(fake_time.sleeps) == 3
    assert caught.value.status is None and caught.value.body == b""
    assert url in str(caught.value)


async def test_async_twin_follows_the_same_rules(fake_time: FakeTime) -> None:
    calls: list[float] = []
    gone = _gone_until(fake_time, 10.0, calls)
    async with AsyncScheduledEventsClient(
        BASE, transport=MockTransport(gone), sleep=fake_time.asleep, clock=fake_time.clock
    ) as client:
        assert (await client.get()).incarnation == 1
    assert calls[-1] >= 10.0

    script = Script([reply(502, BROKEN)])
    async with AsyncScheduledEventsClient(
        BASE, transport=MockTransport(script), sleep=fake_time.asleep,
        clock=fake_time.clock, max_retries=4,
    ) as client:  # fmt: skip
        with pytest.raises(ServerError) as caught:
            await client.get()
    assert len(script.requests) == 5 and caught.value.status == 502

    url = f"http://127.0.0.1:{free_port()}"
    async with AsyncScheduledEventsClient(url, sleep=fake_time.asleep, max_retries=1) as aclient:
        with pytest.raises(EndpointUnreachable):
            await aclient.get()


def test_real_rate_limit_is_ridden_out(start_server: Callable[..., ServerProcess]) -> None:
    server = start_server(["--clock", "virtual", "--enablement", "always", "--rate-limit", "2"])
    with httpx.Client(trust_env=False) as raw:  # the limit is real: a burst meets 429s
        url = server.imds_url + "/metadata/scheduledevents?api-version=2020-07-01"
        statuses = [raw.get(url, headers={"Metadata": "true"}).status_code for _ in range(8)]
    assert 429 in statuses
    with ScheduledEventsClient(server.imds_url, backoff=0.2, backoff_max=1.0,
                               max_retries=10) as client:  # fmt: skip
        incarnations = [client.get().incarnation for _ in range(6)]
    assert incarnations == [1] * 6


def test_first_call_gets_the_long_timeout(start_server: Callable[..., ServerProcess]) -> None:
    server = start_server(["--clock", "virtual", "--rate-limit", "0", "--first-call-delay", "1.5"])
    with ScheduledEventsClient(server.imds_url, local_address=ADDRESS["web-0"], timeout=0.5,
                               first_call_timeout=20) as client:  # fmt: skip
        started = time.monotonic()
        assert client.get().incarnation >= 1  # waited out the scope's first-call delay
        assert time.monotonic() - started >= 1.4
        client.get()  # later calls are quick (and the short timeout is enough)
    client = ScheduledEventsClient(server.imds_url, local_address=ADDRESS["jumpbox"],
                                   timeout=0.5, first_call_timeout=0.5)  # fmt: skip
    with client, pytest.raises(EndpointTimeout) as caught:
        client.get()
    assert caught.value.status is None
