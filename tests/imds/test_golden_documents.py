"""Each scenario's document at every api-version, byte for byte, against golden files.

The scenarios run on the demo fleet at T0 (a frozen virtual clock, deterministic event
ids); the document is read over the endpoint as a VM of the scope. The golden files under
``golden/<scenario>/<api-version>.json`` were written by the code with
FOREWARN_WRITE_GOLDEN=1 and reviewed against the wire contract (which fields each
api-version shows, ``_`` before resource names in 2017-03-01, NotBefore of a Started
event empty), so a change in rendering fails here instead of being re-derived.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from tests.imds.conftest import GOLDEN, Imds, ImdsFactory
from tests.support.golden import check_golden
from tests.support.wire import VERSIONS


async def _no_events(imds: Imds) -> str:
    return "web-1"


async def _platform_reboot(imds: Imds) -> str:
    imds.submit("platform-reboot", "web-0")
    return "web-1"


async def _user_redeploy_started(imds: Imds) -> str:
    event = imds.only_event(imds.submit("user-redeploy", "web-0"))
    approved = await imds.post("web-0", event.id)
    assert approved.status_code == 200, approved.content
    return "web-1"


async def _live_migration(imds: Imds) -> str:
    imds.submit("live-migration", "jumpbox")
    return "jumpbox"


async def _spot_eviction(imds: Imds) -> str:
    imds.submit("spot-eviction", "workers_0")
    return "workers_0"


async def _scale_in(imds: Imds) -> str:
    imds.submit("scale-in", "workers_1")
    return "workers_1"


async def _hardware_failure(imds: Imds) -> str:
    imds.submit("hardware-failure", "FrontEnd_IN_0")
    return "FrontEnd_IN_0"


#: Scenario name -> what happens first (returns the VM that reads the document).
SCENARIOS: dict[str, Callable[[Imds], Awaitable[str]]] = {
    "no-events": _no_events,
    "platform-reboot": _platform_reboot,
    "user-redeploy-started": _user_redeploy_started,
    "live-migration": _live_migration,
    "spot-eviction": _spot_eviction,
    "scale-in": _scale_in,
    "hardware-failure": _hardware_failure,
}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_the_document_is_the_golden_file(
    make_imds: ImdsFactory, scenario: str, version: str
) -> None:
    imds = make_imds()
    vm = await SCENARIOS[scenario](imds)
    response = await imds.get(vm, version=version)
    assert response.status_code == 200, response.content
    check_golden(GOLDEN / scenario / f"{version}.json", response.content)


def test_every_golden_file_belongs_to_a_scenario_and_version() -> None:
    """No stale golden file outlives its scenario (it would never be compared)."""
    expected = {f"{s}/{v}.json" for s in SCENARIOS for v in VERSIONS}
    present = {str(p.relative_to(GOLDEN)) for p in GOLDEN.rglob("*.json")}
    assert present == expected
