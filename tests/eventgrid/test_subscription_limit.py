"""What is acknowledged is kept: 150 subscriptions created at once, through the control
API or ARM, while the webhook takes its time over each validation handshake: exactly 100
are answered 201 (the limit), the others a 4xx saying so, and after a restart every one
of the 100 is served (listed, and delivered to)."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from tests.arm.conftest import SUBSCRIPTION, ArmServer, start_arm_server
from tests.eventgrid.conftest import FLEET, GridServer
from tests.eventgrid.webhook import Behaviour, subscription_body, webhook

LIMIT = 100
AT_ONCE = 150
#: How long the webhook takes over each handshake: every creation is under way at once.
HANDSHAKE_DELAY = 0.5


def _slow_handshakes() -> Behaviour:
    """A webhook that takes ``HANDSHAKE_DELAY`` over each validation handshake."""
    return Behaviour(before_validate=lambda _: time.sleep(HANDSHAKE_DELAY))


def _notified(hook: Behaviour) -> set[str]:
    """The subscriptions the webhook got a notification for."""
    return {r.headers["aeg-subscription-name"].lower() for r in hook.notifications()}


async def _all_at_once(
    client: httpx.AsyncClient, requests: list[tuple[str, str, Any]]
) -> list[httpx.Response]:
    return list(
        await asyncio.gather(*(client.request(m, path, json=body) for m, path, body in requests))
    )


def _create_through_control(arm: ArmServer, url: str) -> dict[str, httpx.Response]:
    names = [f"sub-{i:03d}" for i in range(AT_ONCE)]

    async def run() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=AT_ONCE)
        async with httpx.AsyncClient(
            base_url=arm.server.control_url, timeout=60, limits=limits, trust_env=False
        ) as client:
            return await _all_at_once(client, [
                ("POST", "/api/v1/eventgrid/subscriptions", subscription_body(n, url))
                for n in names
            ])  # fmt: skip

    return dict(zip(names, asyncio.run(run()), strict=True))


def _check_the_limit_held(answers: dict[str, httpx.Response]) -> list[str]:
    """The names answered 201; every other answer a 4xx naming the limit."""
    created = sorted(n for n, r in answers.items() if r.status_code == 201)
    refused = {n: r for n, r in answers.items() if r.status_code != 201}
    assert len(created) == LIMIT, Counter(r.status_code for r in answers.values())
    for r in refused.values():
        assert 400 <= r.status_code < 500, r.text
        assert f"at most {LIMIT} subscriptions" in r.text, r.text
    return created


def test_150_creations_at_once_keep_exactly_the_100_acknowledged_across_a_restart(
    tmp_path: Path,
) -> None:
    arm = start_arm_server(tmp_path, FLEET, extra=("--time-scale", "100"))
    try:
        with webhook(_slow_handshakes()) as (url, hook):
            created = _check_the_limit_held(_create_through_control(arm, url))
            listed = arm.server.control("GET", "/api/v1/eventgrid/subscriptions").json()
            assert sorted(s["name"] for s in listed) == created
            arm.server.stop()

            arm = start_arm_server(tmp_path, FLEET)
            grid = GridServer(arm)
            listed = grid.server.control("GET", "/api/v1/eventgrid/subscriptions").json()
            assert sorted(s["name"] for s in listed) == created
            assert {s["properties"]["provisioningState"] for s in listed} == {"Succeeded"}
            grid.trigger("user-reboot", "pub")
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and len(_notified(hook)) < LIMIT:
                time.sleep(0.05)
            assert sorted(_notified(hook)) == created  # every one acknowledged is delivered to
            more = grid.subscribe("one-more", url)
            assert more.status_code == 409 and f"at most {LIMIT}" in more.text
    finally:
        arm.server.stop()


def test_150_puts_at_once_through_arm_create_exactly_100(tmp_path: Path) -> None:
    arm = start_arm_server(tmp_path, FLEET, extra=("--time-scale", "100"))
    names = [f"arm-{i:03d}" for i in range(AT_ONCE)]
    try:
        with webhook(_slow_handshakes()) as (url, _):

            async def run() -> list[httpx.Response]:
                context = ssl.create_default_context(cafile=arm.ca)
                async with httpx.AsyncClient(
                    base_url=arm.url, verify=context, timeout=60, trust_env=False,
                    limits=httpx.Limits(max_connections=AT_ONCE),
                    headers={"Authorization": "Bearer x"},
                ) as client:  # fmt: skip
                    return await _all_at_once(client, [(
                        "PUT",
                        f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.EventGrid"
                        f"/eventSubscriptions/{n}?api-version=2025-04-01",
                        {"properties": subscription_body(n, url)["properties"]},
                    ) for n in names])  # fmt: skip

            answers = dict(zip(names, asyncio.run(run()), strict=True))
            created = _check_the_limit_held(answers)
            for r in answers.values():
                if r.status_code != 201:
                    assert r.json()["error"]["code"] == "InvalidRequest"
            listed = arm.server.control("GET", "/api/v1/eventgrid/subscriptions").json()
            assert sorted(s["name"] for s in listed) == created
    finally:
        arm.server.stop()
