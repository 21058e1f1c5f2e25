"""The pytest plugin (entry point ``pytest11``): fixtures that run forewarn in-process.

Choose the fleet with ``@pytest.mark.forewarn(fleet=...)`` (YAML text or a mapping; also
``vm=``, ``enablement=``, ``rate_limit=``, ``time_scale=``, ``start=``, ``arm=True`` for
Azure's control plane at ``forewarn.arm_url``) or by overriding
the ``forewarn_fleet`` fixture; the marker wins. Importing this module is cheap: the
emulator is built only when a test asks for a fixture.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from forewarn.client import ScheduledEventsClient
    from forewarn.testing.server import Fleet, Forewarn

__all__ = [
    "forewarn",
    "forewarn_client",
    "forewarn_fleet",
    "forewarn_url",
    "forewarn_vm",
    "pytest_configure",
]

_OPTIONS = ("enablement", "rate_limit", "time_scale", "start", "first_call_delay", "arm")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "forewarn(fleet=None, vm=None, enablement='always', rate_limit=0, time_scale=1, "
        "start=None, arm=False): the fleet and settings of the in-process forewarn of this test",
    )


def _marker(request: pytest.FixtureRequest) -> dict[str, Any]:
    marker = request.node.get_closest_marker("forewarn")
    if marker is None:
        return {}
    if marker.args:
        raise pytest.UsageError("@pytest.mark.forewarn takes keyword arguments only (fleet=...)")
    unknown = sorted(set(marker.kwargs) - {"fleet", "vm", *_OPTIONS})
    if unknown:
        raise pytest.UsageError(f"@pytest.mark.forewarn: unknown option {', '.join(unknown)}")
    return dict(marker.kwargs)


@pytest.fixture
def forewarn_fleet() -> Fleet:
    """The fleet (YAML text or mapping); None is the demo fleet. Override it to choose."""
    return None


@pytest.fixture
def forewarn(request: pytest.FixtureRequest, forewarn_fleet: Fleet) -> Iterator[Forewarn]:
    """A running in-process forewarn on a virtual clock: URLs, clients and control."""
    try:
        from forewarn.testing.server import Forewarn
    except ModuleNotFoundError as exc:  # a VM install: the client and agent, no emulator
        raise pytest.fail.Exception(
            f"the forewarn fixture runs the emulator, which this install lacks (no module "
            f"{exc.name!r}): install forewarn with its [server] extra: "
            "pip install '<its wheel or checkout>[server]'",
            pytrace=False,
        ) from None

    options = _marker(request)
    fleet = options.pop("fleet", forewarn_fleet)
    options.pop("vm", None)
    with Forewarn(fleet, **options) as running:
        yield running


@pytest.fixture
def forewarn_vm(request: pytest.FixtureRequest, forewarn: Forewarn) -> str:
    """The VM a test speaks as: the marker's ``vm=``, else the fleet's default VM."""
    name = _marker(request).get("vm") or forewarn.default_vm
    forewarn.url(name)  # fails clearly for a VM the fleet does not have
    return str(name)


@pytest.fixture
def forewarn_url(forewarn: Forewarn, forewarn_vm: str) -> str:
    """The metadata endpoint's base URL as ``forewarn_vm`` sees it (its own port)."""
    return forewarn.url(forewarn_vm)


@pytest.fixture
def forewarn_client(forewarn: Forewarn, forewarn_vm: str) -> ScheduledEventsClient:
    """A ``ScheduledEventsClient`` speaking as ``forewarn_vm``."""
    return forewarn.client(forewarn_vm)
