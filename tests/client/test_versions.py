"""Every api-version, against forewarn in-process (the testing kit) and as a real
``forewarn serve``:
what each version shows reaches the typed document, and approvals work in each."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from forewarn.client import (
    Event,
    EventSource,
    EventStatus,
    EventType,
    ScheduledEventsClient,
)
from forewarn.testing import Forewarn
from tests.client.conftest import ADDRESS
from tests.support.serverproc import ServerProcess
from tests.support.wire import VERSIONS

REBOOT_TEXT = "Virtual machine is going to be restarted as requested by authorized user."
MIGRATION_TEXT = (
    "Virtual machine is being paused because of a memory-preserving Live Migration operation."
)


def _has(version: str, since: str) -> bool:
    return version >= since  # ISO dates compare as strings


def _check_reboot(event: Event, version: str, vm: str, not_before: datetime | None) -> None:
    """A user reboot of ``vm`` as ``version`` shows it."""
    assert event.event_type is EventType.REBOOT
    assert event.status is EventStatus.SCHEDULED
    assert event.resources == ((f"_{vm}",) if version == "2017-03-01" else (vm,))
    assert event.affects(vm)
    assert event.description == (REBOOT_TEXT if _has(version, "2019-04-01") else "")
    # before 2019-08-01 the source is not on the wire: the documented default applies
    expected_source = EventSource.USER if _has(version, "2019-08-01") else EventSource.PLATFORM
    assert event.source is expected_source
    assert event.duration_seconds == -1
    assert event.extra == {}
    if not_before is not None:
        assert event.not_before == not_before


@pytest.mark.parametrize("version", VERSIONS)
async def test_every_version_in_process(forewarn: Forewarn, version: str) -> None:
    reboot = forewarn.trigger("user-reboot", "web-0")
    (reboot_id,) = reboot["event_ids"]
    (freeze_id,) = forewarn.trigger("live-migration", "jumpbox")["event_ids"]
    (preempt_id,) = forewarn.trigger("spot-eviction", "workers_0")["event_ids"]
    reboot_at = datetime.fromtimestamp(int(reboot["not_before"]), tz=UTC)

    async with forewarn.async_client("web-0", api_version=version) as web0:
        document = await web0.get()
        assert document.etag == f'"{document.incarnation}"'
        (event,) = document.events
        assert event.event_id == reboot_id
        _check_reboot(event, version, "web-0", reboot_at)

    async with forewarn.async_client("jumpbox", api_version=version) as jumpbox:
        (freeze,) = (await jumpbox.get()).events
        assert (freeze.event_id, freeze.event_type) == (freeze_id, EventType.FREEZE)
        assert freeze.duration_seconds == (5 if _has(version, "2020-07-01") else -1)
        assert freeze.description == (MIGRATION_TEXT if _has(version, "2019-04-01") else "")

    async with forewarn.async_client("workers_0", api_version=version) as worker:
        events = (await worker.get()).events
        if _has(version, "2017-11-01"):
            assert [(e.event_id, e.event_type) for e in events] == [(preempt_id, EventType.PREEMPT)]
        else:  # Preempt is newer than this version: the endpoint leaves it out
            assert events == ()

    # approving in this version starts the reboot of web-0
    async with forewarn.async_client("web-0", api_version=version) as web0:
        await web0.approve(reboot_id.lower())
        (started,) = (await web0.get()).events
        assert started.event_id == reboot_id
        assert started.started and started.not_before is None


def test_every_version_against_a_serve_process(served: ServerProcess) -> None:
    op = served.control("POST", "/api/v1/operations",
                        json={"kind": "user-reboot", "target": "web-1"}).json()  # fmt: skip
    (event_id,) = op["event_ids"]
    not_before = datetime.fromtimestamp(int(op["not_before"]), tz=UTC)
    seen = {}
    for version in VERSIONS:
        with ScheduledEventsClient(
            served.imds_url, api_version=version, local_address=ADDRESS["web-1"]
        ) as client:
            document = client.get()
            (event,) = document.events
            assert event.event_id == event_id
            _check_reboot(event, version, "web-1", not_before)
            seen[version] = document.incarnation
    assert len(set(seen.values())) == 1  # one document, rendered per version

    # web-4 shares the scope: its approval, in the oldest version, starts web-1's reboot
    with ScheduledEventsClient(
        served.imds_url, api_version="2017-03-01", local_address="127.1.0.5"
    ) as web4:
        web4.approve(event_id)
    for version in VERSIONS:
        with ScheduledEventsClient(
            served.imds_url, api_version=version, local_address=ADDRESS["web-1"]
        ) as client:
            (event,) = client.get().events
            assert event.started and event.not_before is None
    assert served.control("GET", f"/api/v1/events/{event_id}").json()["status"] == "Started"


def test_instance_metadata_from_each_vm(forewarn: Forewarn) -> None:
    worker = forewarn.client("workers_0").instance()
    assert worker.compute_name == "workers_0"
    assert worker.vm_scale_set_name == "workers"
    assert (worker.platform_update_domain, worker.platform_fault_domain) == (0, 0)
    assert worker.location == "westeurope"
    assert worker.raw["compute"]["priority"] == "Spot"
    web1 = forewarn.client("web-1").instance()
    assert (web1.compute_name, web1.vm_scale_set_name, web1.zone) == ("web-1", None, None)
    assert web1.platform_update_domain == 1
    assert web1.vm_id and web1.vm_id != worker.vm_id
