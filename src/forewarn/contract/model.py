"""Wire types of Scheduled Events: what an event and a document carry.

These are shared by the emulator (which renders them) and the client (which parses
them from real Azure), so they hold wire values only: no scopes, no operations.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

import msgspec

from forewarn.contract.versions import EventType

__all__ = [
    "RESOURCE_TYPE",
    "Document",
    "Event",
    "EventSource",
    "EventStatus",
    "EventType",
    "resource_matches",
]

RESOURCE_TYPE = "VirtualMachine"


class EventStatus(StrEnum):
    """The two states an event can show; finished events simply disappear."""

    SCHEDULED = "Scheduled"
    STARTED = "Started"


class EventSource(StrEnum):
    """Who asked for the impact."""

    PLATFORM = "Platform"
    USER = "User"


class Event(msgspec.Struct, frozen=True, kw_only=True):
    """One event as seen on the wire (all versions' fields; absent ones get defaults).

    ``not_before`` is None once the event has Started (the wire shows ``""``).
    ``event_type`` stays a plain string when parsing so that an event type newer than
    this library does not break a client.
    """

    event_id: str
    status: str
    event_type: str
    resources: tuple[str, ...]
    not_before: datetime | None
    resource_type: str = RESOURCE_TYPE
    description: str = ""
    source: str = EventSource.PLATFORM.value
    duration_seconds: int = -1

    @property
    def started(self) -> bool:
        """True once the impact has begun."""
        return self.status == EventStatus.STARTED

    def affects(self, vm_name: str) -> bool:
        """Whether ``vm_name`` is listed in Resources (ignoring the 2017-03-01 underscore)."""
        return any(resource_matches(r, vm_name) for r in self.resources)


class Document(msgspec.Struct, frozen=True):
    """A whole Scheduled Events document."""

    incarnation: int
    events: tuple[Event, ...] = ()

    def for_vm(self, vm_name: str) -> tuple[Event, ...]:
        """The events that list ``vm_name`` (every VM of a scope sees all of its events)."""
        return tuple(e for e in self.events if e.affects(vm_name))


def resource_matches(resource: str, vm_name: str) -> bool:
    """Compare a Resources entry to a VM name, tolerating the 2017-03-01 leading underscore."""
    if resource.lower() == vm_name.lower():
        return True
    return resource.startswith("_") and resource[1:].lower() == vm_name.lower()
