"""The VM side's values are frozen: equal by their fields (an instance's ``raw`` left
out), hashable, matched by position and keyword, and their rules hold on ``replace``."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from forewarn.client import RetryPolicy
from forewarn.contract import (
    Event,
    EventSource,
    EventStatus,
    EventType,
    Instance,
    ResourceType,
    lookup_version,
)
from forewarn.contract.model import EMPTY_EXTRA

_NOW = datetime(2016, 9, 19, 18, 29, 47, tzinfo=UTC)
_EVENT_ARGS = ("A", EventType.REBOOT, EventStatus.SCHEDULED, ResourceType.VIRTUAL_MACHINE,
               ("vm-1", "vm-2"), _NOW, "text", EventSource.USER, 30, EMPTY_EXTRA)  # fmt: skip


def test_matched_by_position_and_keyword() -> None:
    match Event(*_EVENT_ARGS):
        case Event("A", EventType.REBOOT, status=EventStatus.SCHEDULED, duration_seconds=30):
            pass
        case _:
            pytest.fail("no match")


def test_values_are_frozen_and_hashable() -> None:
    event = Event(*_EVENT_ARGS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.event_id = "B"  # type: ignore[misc]
    assert {event, Event(*_EVENT_ARGS)} == {event}


def test_an_instance_is_equal_whatever_its_raw_metadata() -> None:
    assert Instance("vm", "id", raw={"a": 1}) == Instance("vm", "id", raw={"b": 2})
    assert hash(Instance("vm", "id", raw={"a": 1})) == hash(Instance("vm", "id"))
    assert Instance("vm", "id") != Instance("vm", "other")


def test_the_api_versions_are_values() -> None:
    version = lookup_version("2020-07-01")
    assert version is not None and version == dataclasses.replace(version)
    assert version.has_duration and EventType.TERMINATE in version.event_types


def test_the_policy_is_checked_on_replace_too() -> None:
    with pytest.raises(ValueError, match="max_retries must be >= 0"):
        dataclasses.replace(RetryPolicy(), max_retries=-1)
