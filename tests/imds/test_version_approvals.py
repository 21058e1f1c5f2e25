"""An api-version's client can only approve the event types its documents show (P4, D5)."""

from __future__ import annotations

import pytest

from tests.imds.conftest import Imds
from tests.support.wire import VERSIONS


@pytest.mark.parametrize(
    ("version", "status"),
    [("2017-08-01", 400), ("2017-11-01", 200), ("2020-07-01", 200)],
)
async def test_preempt_is_approvable_only_where_it_is_visible(
    imds: Imds, version: str, status: int
) -> None:
    op = imds.submit("spot-eviction", "workers_1")
    event = imds.only_event(op)
    response = await imds.post("workers_0", event.id, version=version)
    assert response.status_code == status, response.content
    assert (imds.event(event.id).approved_by is None) == (status == 400)
    if status == 400:
        assert event.id in response.json()["error"]


async def test_an_echoed_event_id_is_truncated(imds: Imds) -> None:
    response = await imds.post("web-1", "X" * 10_000)
    assert response.status_code == 400
    assert len(response.content) < 200


@pytest.mark.parametrize("version", VERSIONS)
async def test_every_version_approves_and_the_event_starts_for_all_its_vms(
    imds: Imds, version: str
) -> None:
    op = imds.submit("user-reboot", "web-0")
    event = imds.only_event(op)
    response = await imds.post("web-3", event.id.lower(), version=version)
    assert (response.status_code, response.content) == (200, b"")
    for vm in ("web-0", "web-3"):
        (shown,) = (await imds.document(vm, version=version))["Events"]
        assert (shown["EventId"], shown["EventStatus"], shown["NotBefore"]) == (
            event.id,
            "Started",
            "",
        )


@pytest.mark.parametrize("version", VERSIONS)
async def test_every_version_rejects_a_bad_body_and_approves_nothing(
    imds: Imds, version: str
) -> None:
    op = imds.submit("user-reboot", "web-0")
    event = imds.only_event(op)
    response = await imds.request(
        "POST", vm="web-3", version=version, content=b'{"StartRequests": []}'
    )
    assert response.status_code == 400
    assert response.json() == {"error": "StartRequests is empty"}
    assert imds.event(event.id).approved_by is None
