"""The project's own client against injected endpoint faults, on the real HTTP transport
of an in-process forewarn (virtual clock): it retries 410 for up to 70 s, backs off on
500 and 429, retries a reset connection, gives up on a time-out and works again after,
and an event announced during a fault is there once it clears."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from forewarn.client import EndpointTimeout, ScheduledEventsClient
from forewarn.testing.server import Forewarn


@pytest.fixture
def fw() -> Iterator[Forewarn]:
    forewarn = Forewarn().start()
    yield forewarn
    forewarn.stop()


def fault(fw: Forewarn, **body: Any) -> dict[str, Any]:
    response = httpx.post(f"{fw.control_url}/api/v1/faults", json=body, trust_env=False)
    assert response.status_code == 201, response.text
    out: dict[str, Any] = response.json()
    return out


def faults(fw: Forewarn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = httpx.get(f"{fw.control_url}/api/v1/faults", trust_env=False).json()
    return out


def virtual_client(fw: Forewarn, slept: list[float], **options: Any) -> ScheduledEventsClient:
    """A client of web-0 whose waits move the platform's virtual clock, and whose clock
    is the platform's: a 70 s fault passes in a moment."""

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        fw.advance(seconds)

    return fw.client("web-0", sleep=sleep, clock=fw.now, **options)


def test_410_for_70_s_is_retried_and_an_event_announced_meanwhile_is_handled(
    fw: Forewarn,
) -> None:
    start = fw.now()
    fault(fw, kind="status", status=410, duration_seconds=70)
    op = fw.trigger("user-reboot", "web-0", notice=900)  # announced during the fault
    slept: list[float] = []
    client = virtual_client(fw, slept)
    document = client.get()  # 410s until the 70 s are over, then the document
    assert [e.event_id for e in document.events] == op["event_ids"]
    # each advance rounds at the clock's magnitude (~1.8e9 s): allow float drift
    assert fw.now() - start >= 70 - 1e-3 and sum(slept) >= 70 - 1e-3
    assert all(0.5 <= s <= 1.5 for s in slept[:-1])  # about once a second, as advised
    assert faults(fw) == []  # the window is over: the fault is gone
    client.approve(op["event_ids"][0])
    assert fw.event(op["event_ids"][0])["status"] == "Started"


def test_500s_are_retried_with_growing_back_off(fw: Forewarn) -> None:
    fault(fw, kind="status", status=500, duration_seconds=6)
    slept: list[float] = []
    client = virtual_client(fw, slept, backoff=0.5, jitter=lambda: 0.999)
    assert client.get().events == ()
    assert slept[:4] == pytest.approx([0.4995, 0.999, 1.998, 3.996])  # doubling
    assert sum(slept) >= 6


def test_a_reset_connection_is_retried(fw: Forewarn) -> None:
    fault(fw, kind="reset", vm="web-0", duration_seconds=2)
    slept: list[float] = []
    client = virtual_client(fw, slept, backoff=0.5, jitter=lambda: 0.999)
    assert client.get().events == ()
    assert len(slept) >= 2 and sum(slept) >= 2
    assert fw.client("web-1").get().events == ()  # others were never touched


def test_a_cotenant_eating_the_budget_gets_429_and_back_off_recovers(fw: Forewarn) -> None:
    """The co-tenant takes 4.5 of the VM's 5 requests/s (real time): after one request,
    the client's back-off must wait out the 2 s a new token takes."""
    fault(fw, kind="cotenant", vm="web-0", rate=4.5)
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        time.sleep(seconds)

    client = fw.client("web-0", sleep=sleep, backoff=0.5, jitter=lambda: 0.999)
    client.get()
    client.get()  # 429, 429, ... then a token again
    assert slept and slept == sorted(slept) and sum(slept) >= 1.9
    [cotenant] = faults(fw)
    assert cotenant["hits"] == len(slept)


def test_a_time_out_is_reported_and_the_next_call_works_once_it_clears(fw: Forewarn) -> None:
    hang = fault(fw, kind="timeout", vm="web-0")
    client = fw.client("web-0", timeout=0.5, first_call_timeout=0.5)
    began = time.monotonic()
    with pytest.raises(EndpointTimeout):
        client.get()
    assert time.monotonic() - began >= 0.5  # accepted, never answered
    response = httpx.delete(
        f"{fw.control_url}/api/v1/faults/{hang['id']}",
        headers={"Content-Type": "application/json"}, trust_env=False,
    )  # fmt: skip
    assert response.status_code == 200 and response.json()["hits"] == 1
    assert client.get().events == ()
