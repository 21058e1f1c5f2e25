"""Shared fixtures-as-functions and an independent oracle of the per-version wire rules.

The oracle is written from the documented behaviour, not from ``forewarn.contract.versions``,
so a wrong entry in the implementation's table shows up as a test failure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from forewarn.contract import (
    ApiVersion,
    EventStatus,
    EventType,
    RenderableEvent,
    lookup_version,
    render_document,
)

#: The first api-version that shows each event type.
TYPE_SINCE = {
    EventType.FREEZE: "2017-03-01",
    EventType.REBOOT: "2017-03-01",
    EventType.REDEPLOY: "2017-03-01",
    EventType.PREEMPT: "2017-11-01",
    EventType.TERMINATE: "2019-01-01",
}

#: Keys every version renders for an event, in wire order.
BASE_KEYS = ("EventId", "EventStatus", "EventType", "ResourceType", "Resources", "NotBefore")

#: Keys added by later versions, in wire order, with the first version that has them.
OPTIONAL_KEYS = (
    ("Description", "2019-04-01"),
    ("EventSource", "2019-08-01"),
    ("DurationInSeconds", "2020-07-01"),
)

EPOCH = 1474309787
EPOCH_TEXT = "Mon, 19 Sep 2016 18:29:47 GMT"


def supports(version: str, event_type: EventType) -> bool:
    """Whether ``version`` shows events of ``event_type`` (ISO dates compare as strings)."""
    return version >= TYPE_SINCE[event_type]


def has_key(version: str, key: str) -> bool:
    """Whether ``version`` renders the optional event key ``key``."""
    return version >= dict(OPTIONAL_KEYS)[key]


def expected_keys(version: str) -> list[str]:
    """The event keys ``version`` renders, in order."""
    return [*BASE_KEYS, *(key for key, _ in OPTIONAL_KEYS if has_key(version, key))]


def api(version: str) -> ApiVersion:
    """The ApiVersion called ``version``, which must exist."""
    found = lookup_version(version)
    assert found is not None, version
    return found


def make_event(**overrides: Any) -> RenderableEvent:
    """A scheduled Reboot of ``myvm`` at EPOCH, with any field overridden."""
    fields: dict[str, Any] = {
        "event_id": "602d9444-d2cd-49c7-8624-8643e7171297",
        "status": EventStatus.SCHEDULED,
        "event_type": EventType.REBOOT,
        "resources": ("myvm",),
        "not_before": EPOCH,
        "description": "Host server is undergoing maintenance.",
        "source": "Platform",
        "duration_seconds": -1,
    }
    fields.update(overrides)
    return RenderableEvent(**fields)


def render(
    version: str,
    events: Iterable[RenderableEvent],
    incarnation: int = 1,
    *,
    role_instances: bool = False,
) -> bytes:
    """render_document by version name."""
    return render_document(incarnation, events, api(version), role_instances=role_instances)
