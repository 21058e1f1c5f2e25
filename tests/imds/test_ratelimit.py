"""R8: at most 5 requests per second per VM, across every metadata path.

The limiter runs on real monotonic time, so these tests fire bursts back to back (an
in-process request takes well under a millisecond) and wait at most a quarter second.
"""

from __future__ import annotations

import asyncio

import pytest

from forewarn.imds import ImdsSettings, RateLimiter
from tests.imds.conftest import (
    EMPTY_WEB,
    INSTANCE,
    INSTANCE_VERSION,
    RATE_BODY,
    SE,
    VERSIONS_PATH,
    Imds,
    ImdsFactory,
    assert_json_reply,
)

#: The query each path needs to succeed.
QUERIES = {
    SE: b"api-version=2020-07-01",
    INSTANCE: b"api-version=" + INSTANCE_VERSION.encode(),
    VERSIONS_PATH: b"",
}


@pytest.fixture
def limited(make_imds: ImdsFactory) -> Imds:
    """The demo fleet behind an endpoint with the faithful 5 requests per second."""
    return make_imds(rate_limit=5.0)


async def burst(imds: Imds, count: int, address: str = "127.1.0.2") -> list[int]:
    """Statuses of ``count`` back-to-back GETs of the Scheduled Events document."""
    return [(await imds.raw(client=(address, 50000))).status for _ in range(count)]


def test_the_faithful_default_is_five_per_second() -> None:
    assert ImdsSettings().rate_limit == 5.0


async def test_sixth_immediate_request_is_throttled(limited: Imds) -> None:
    async with limited.client("web-1") as client:
        for _ in range(5):
            response = await client.get(
                SE, params={"api-version": "2020-07-01"}, headers={"Metadata": "true"}
            )
            assert_json_reply(response, 200, EMPTY_WEB)
        response = await client.get(
            SE, params={"api-version": "2020-07-01"}, headers={"Metadata": "true"}
        )
    assert_json_reply(response, 429, RATE_BODY)
    assert "etag" not in response.headers


async def test_another_vm_is_not_affected(limited: Imds) -> None:
    assert await burst(limited, 6, limited.address("web-1")) == [200] * 5 + [429]
    assert await burst(limited, 5, limited.address("web-2")) == [200] * 5
    assert await burst(limited, 1, limited.address("workers_1")) == [200]


async def test_the_limit_counts_every_path(limited: Imds) -> None:
    order = [SE, INSTANCE, VERSIONS_PATH, SE, INSTANCE, VERSIONS_PATH, SE, INSTANCE]
    statuses = [(await limited.raw(path=path, query=QUERIES[path])).status for path in order]
    assert statuses == [200] * 5 + [429] * 3
    response = await limited.raw(path=VERSIONS_PATH, query=b"")
    assert (response.status, response.body) == (429, RATE_BODY)


async def test_errors_and_posts_count_too(limited: Imds) -> None:
    statuses = [
        (await limited.raw(query=b"")).status,
        (await limited.raw(headers=[])).status,
        (await limited.raw(method="PUT")).status,
        (await limited.raw(method="POST", body=b"{}")).status,
        (await limited.raw()).status,
        (await limited.raw()).status,
    ]
    assert statuses == [400, 400, 405, 400, 200, 429]


async def test_throttled_requests_do_not_approve(limited: Imds) -> None:
    op = limited.submit("platform-reboot", "web-0")
    event = limited.only_event(op)
    assert await burst(limited, 5) == [200] * 5
    body = b'{"StartRequests":[{"EventId":"%s"}]}' % event.id.encode()
    response = await limited.raw(method="POST", body=body)
    assert (response.status, response.body) == (429, RATE_BODY)
    assert limited.event(event.id).approved_by is None


async def test_unknown_address_shares_the_default_vm_bucket(limited: Imds) -> None:
    assert await burst(limited, 3, "10.9.9.9") == [200] * 3
    assert await burst(limited, 3, limited.address("web-0")) == [200, 200, 429]


async def test_tokens_refill_over_time(limited: Imds) -> None:
    assert await burst(limited, 6) == [200] * 5 + [429]
    await asyncio.sleep(0.25)  # 1.25 tokens at 5 per second
    assert await burst(limited, 2) == [200, 429]


async def test_no_limit_when_disabled(imds: Imds) -> None:
    assert await burst(imds, 30) == [200] * 30


def test_bucket_arithmetic_on_a_fake_clock() -> None:
    now = [100.0]
    limiter = RateLimiter(5.0, lambda: now[0])
    assert [limiter.allow("a") for _ in range(6)] == [True] * 5 + [False]
    assert limiter.allow("b")
    now[0] += 0.2
    assert [limiter.allow("a") for _ in range(2)] == [True, False]
    now[0] += 10.0  # the bucket holds at most ``rate`` tokens
    assert [limiter.allow("a") for _ in range(6)] == [True] * 5 + [False]
