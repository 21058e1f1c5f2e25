"""Proxies in the environment never apply: the endpoint is link-local, a proxy cannot reach it."""

from __future__ import annotations

import httpx
import pytest

from forewarn.client import AsyncScheduledEventsClient, ScheduledEventsClient
from forewarn.testing import Forewarn
from tests.support.serverproc import free_port

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                   "all_proxy")  # fmt: skip


@pytest.fixture
def dead_proxy(monkeypatch: pytest.MonkeyPatch) -> str:
    """Every proxy variable points at a port nobody listens on; nothing is exempt."""
    proxy = f"http://127.0.0.1:{free_port()}"
    for name in PROXY_VARIABLES:
        monkeypatch.setenv(name, proxy)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    return proxy


def test_a_client_that_honours_the_environment_fails(forewarn: Forewarn, dead_proxy: str) -> None:
    """The control experiment: the proxy variables really would break a naive client."""
    with httpx.Client() as naive, pytest.raises((httpx.ProxyError, httpx.ConnectError)):
        naive.get(forewarn.url() + "/metadata/scheduledevents?api-version=2020-07-01",
                  headers={"Metadata": "true"})  # fmt: skip


def test_sync_client_ignores_proxy_variables(forewarn: Forewarn, dead_proxy: str) -> None:
    with ScheduledEventsClient(forewarn.url("web-0"), max_retries=0) as client:
        assert client.get().incarnation == 1
        assert client.instance().compute_name == "web-0"


async def test_async_client_ignores_proxy_variables(forewarn: Forewarn, dead_proxy: str) -> None:
    async with AsyncScheduledEventsClient(forewarn.url("web-0"), max_retries=0) as client:
        assert (await client.get()).incarnation == 1
