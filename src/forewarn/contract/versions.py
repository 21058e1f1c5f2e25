"""The api-versions of Scheduled Events and what each one renders.

One table answers every "does version X have Y" question, so the renderer, the
endpoint and the client never compare date strings by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "NEWEST_VERSIONS",
    "SUPPORTED_VERSIONS",
    "ApiVersion",
    "EventType",
    "lookup_version",
]


class EventType(StrEnum):
    """Kinds of impact an event announces."""

    FREEZE = "Freeze"
    REBOOT = "Reboot"
    REDEPLOY = "Redeploy"
    PREEMPT = "Preempt"
    TERMINATE = "Terminate"


@dataclass(frozen=True, slots=True)
class ApiVersion:
    """One supported api-version and the wire features it carries."""

    name: str
    event_types: frozenset[EventType]
    underscore_iaas_names: bool = False
    has_description: bool = False
    has_event_source: bool = False
    has_duration: bool = False
    post_needs_metadata_header: bool = True


_BASE = frozenset({EventType.FREEZE, EventType.REBOOT, EventType.REDEPLOY})
_WITH_PREEMPT = _BASE | {EventType.PREEMPT}
_ALL_TYPES = _WITH_PREEMPT | {EventType.TERMINATE}

_TABLE: tuple[ApiVersion, ...] = (
    ApiVersion("2017-03-01", _BASE, underscore_iaas_names=True, post_needs_metadata_header=False),
    ApiVersion("2017-08-01", _BASE),
    ApiVersion("2017-11-01", _WITH_PREEMPT),
    ApiVersion("2019-01-01", _ALL_TYPES),
    ApiVersion("2019-04-01", _ALL_TYPES, has_description=True),
    ApiVersion("2019-08-01", _ALL_TYPES, has_description=True, has_event_source=True),
    ApiVersion(
        "2020-07-01", _ALL_TYPES, has_description=True, has_event_source=True, has_duration=True
    ),
)

_BY_NAME: dict[str, ApiVersion] = {v.name: v for v in _TABLE}

#: Every supported version, oldest first.
SUPPORTED_VERSIONS: tuple[str, ...] = tuple(v.name for v in _TABLE)

#: The versions a 400 answer suggests, newest first (as the real service does).
NEWEST_VERSIONS: tuple[str, ...] = ("2020-07-01", "2019-08-01", "2019-04-01")


def lookup_version(name: str) -> ApiVersion | None:
    """The version called ``name`` exactly, or None when it is unknown or retired."""
    return _BY_NAME.get(name)
