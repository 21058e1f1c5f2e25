"""Fixtures for the fabric tests: a virtual clock at T0 and fabric factories."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from forewarn.fabric import Clock, Fabric
from forewarn.fleet import VM, FleetSpec
from tests.support.fabrics import T0, make_fabric

FabricFactory = Callable[..., Fabric]


@pytest.fixture
def clock() -> Clock:
    """A frozen clock at T0, moved only by the test."""
    return Clock.virtual(start=T0)


@pytest.fixture
def build(clock: Clock) -> FabricFactory:
    """Build a fabric on the shared clock; every scope enabled unless told otherwise."""

    def factory(spec: FleetSpec | None = None, **config: Any) -> Fabric:
        return make_fabric(spec, clock=clock, **config)

    return factory


@pytest.fixture
def fabric(build: FabricFactory) -> Fabric:
    """The demo fleet with every scope enabled."""
    return build()


@pytest.fixture
def lazy_fabric(build: FabricFactory) -> Fabric:
    """The demo fleet with the faithful enablement: off until a VM asks for its document."""
    return build(enablement="on-first-request")


@pytest.fixture
def vm(fabric: Fabric) -> Callable[[str], VM]:
    """Look up a VM of the ``fabric`` fixture by name."""
    return fabric.topology.vm
