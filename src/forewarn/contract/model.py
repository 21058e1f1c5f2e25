"""Wire types of Scheduled Events and instance metadata: what an event, a document and
``/metadata/instance`` carry. The one model of the project: the emulator's replay reads
recorded documents with it and the client (on real VMs) hands it to its users.

Values a service update may extend stay open: an event type, status, source or resource
type this library does not know is kept as a plain string (known ones are enum members,
equal to their strings), and unknown keys land in ``extra``, so a new field never crashes
a client. They hold wire values only: no scopes, no operations.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from forewarn.contract.versions import EventType

__all__ = [
    "EMPTY_EXTRA",
    "EVENT_KEYS",
    "RESOURCE_TYPE",
    "Document",
    "Event",
    "EventSource",
    "EventStatus",
    "EventType",
    "Instance",
    "ResourceType",
    "resource_matches",
]

RESOURCE_TYPE = "VirtualMachine"
#: An event's wire keys, in the order the newest api-version renders them.
EVENT_KEYS = (
    "EventId",
    "EventStatus",
    "EventType",
    "ResourceType",
    "Resources",
    "NotBefore",
    "Description",
    "EventSource",
    "DurationInSeconds",
)
#: ``extra`` of a value that carried no unknown keys (shared, read-only).
EMPTY_EXTRA: Mapping[str, Any] = MappingProxyType({})


class EventStatus(StrEnum):
    """The two states an event can show; finished events simply disappear."""

    SCHEDULED = "Scheduled"
    STARTED = "Started"


class EventSource(StrEnum):
    """Who asked for the impact."""

    PLATFORM = "Platform"
    USER = "User"


class ResourceType(StrEnum):
    """What ``Resources`` names; only VMs so far."""

    VIRTUAL_MACHINE = RESOURCE_TYPE


@dataclass(frozen=True, slots=True)
class Event:
    """One event. ``not_before`` is aware UTC, None once Started (``""`` on the wire)."""

    event_id: str
    event_type: EventType | str
    status: EventStatus | str
    resource_type: ResourceType | str = ResourceType.VIRTUAL_MACHINE
    resources: tuple[str, ...] = ()
    not_before: datetime | None = None
    description: str = ""
    source: EventSource | str = EventSource.PLATFORM
    duration_seconds: int = -1
    extra: Mapping[str, Any] = field(default_factory=lambda: EMPTY_EXTRA)

    def __hash__(self) -> int:  # ``extra`` is a mapping: hash the wire fields only
        return hash((self.event_id, self.event_type, self.status, self.resources, self.not_before))

    @property
    def started(self) -> bool:
        """True once the impact has begun."""
        return self.status == EventStatus.STARTED

    def affects(self, vm_name: str) -> bool:
        """Whether ``vm_name`` is listed in Resources (2017-03-01's ``_name`` included)."""
        return any(resource_matches(r, vm_name) for r in self.resources)


@dataclass(frozen=True, slots=True)
class Document:
    """A whole Scheduled Events document, with the ETag it came with (if any)."""

    incarnation: int
    events: tuple[Event, ...] = ()
    etag: str | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: EMPTY_EXTRA)

    def __hash__(self) -> int:
        return hash((self.incarnation, self.events, self.etag))

    def for_vm(self, name: str) -> tuple[Event, ...]:
        """The events listing ``name`` (every VM of a scope sees all the scope's events)."""
        return tuple(e for e in self.events if e.affects(name))

    def event(self, event_id: str) -> Event | None:
        """The event with ``event_id`` (ignoring case), or None."""
        wanted = event_id.lower()
        return next((e for e in self.events if e.event_id.lower() == wanted), None)


@dataclass(frozen=True, slots=True)
class Instance:
    """The part of ``/metadata/instance`` an agent needs (all of it in ``raw``, which
    equality leaves out)."""

    compute_name: str
    vm_id: str | None = None
    vm_scale_set_name: str | None = None
    platform_update_domain: int | None = None
    platform_fault_domain: int | None = None
    zone: str | None = None
    location: str | None = None
    raw: Mapping[str, Any] = field(default_factory=lambda: EMPTY_EXTRA, compare=False)

    def __hash__(self) -> int:
        return hash((self.compute_name, self.vm_id))


def resource_matches(resource: str, vm_name: str) -> bool:
    """Compare a Resources entry to a VM name, tolerating the 2017-03-01 leading underscore."""
    if resource.lower() == vm_name.lower():
        return True
    return resource.startswith("_") and resource[1:].lower() == vm_name.lower()
