"""What the client hands back: typed, frozen views of the endpoint's JSON.

Parsing is tolerant in the ways real payloads differ (string incarnations, fields absent in
older api-versions, ISO dates in old samples) and keeps what it does not know (future event
types and statuses stay plain strings, unknown keys land in ``extra``), so a service update
never crashes a client. Only a body that is not a document at all is an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from types import MappingProxyType
from typing import Any, TypeVar

import msgspec

from forewarn.contract import (
    EventSource,
    EventStatus,
    EventType,
    parse_not_before,
    resource_matches,
)

__all__ = [
    "Document",
    "DocumentChange",
    "Event",
    "EventSource",
    "EventStatus",
    "EventType",
    "Instance",
    "ResourceType",
    "diff_documents",
    "parse_document",
    "parse_instance",
]

_E = TypeVar("_E", bound=StrEnum)

_EVENT_KEYS = frozenset(
    {
        "EventId",
        "EventStatus",
        "EventType",
        "ResourceType",
        "Resources",
        "NotBefore",
        "Description",
        "EventSource",
        "DurationInSeconds",
    }
)
_DOCUMENT_KEYS = frozenset({"DocumentIncarnation", "Events"})
_EMPTY: Mapping[str, Any] = MappingProxyType({})


class ResourceType(StrEnum):
    """What ``Resources`` names; only VMs so far."""

    VIRTUAL_MACHINE = "VirtualMachine"


class _ParseError(ValueError):
    """A body that is not a document; the twins turn it into ``DocumentError``."""


def _known(enum: type[_E], value: str) -> _E | str:
    """The enum member for ``value``, or ``value`` itself when this library does not know it."""
    try:
        return enum(value)
    except ValueError:
        return value


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
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

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
    """A whole Scheduled Events document, with the ETag it came with."""

    incarnation: int
    events: tuple[Event, ...] = ()
    etag: str | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

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
class DocumentChange:
    """What changed between two documents; the first change of a watch adds every event."""

    document: Document
    added: tuple[Event, ...] = ()
    updated: tuple[Event, ...] = ()
    removed: tuple[Event, ...] = ()
    previous: Document | None = None

    def __bool__(self) -> bool:
        return bool(self.added or self.updated or self.removed)


@dataclass(frozen=True, slots=True)
class Instance:
    """The part of ``/metadata/instance`` an agent needs (all of it in ``raw``)."""

    compute_name: str
    vm_id: str | None = None
    vm_scale_set_name: str | None = None
    platform_update_domain: int | None = None
    platform_fault_domain: int | None = None
    zone: str | None = None
    location: str | None = None
    raw: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)

    def __hash__(self) -> int:
        return hash((self.compute_name, self.vm_id))


def _int(value: Any, name: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise _ParseError(f"{name} must be an integer, got {value!r}")


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _event(raw: Any) -> Event:
    if not isinstance(raw, dict):
        raise _ParseError("each event must be a JSON object")
    event_id = raw.get("EventId")
    if not isinstance(event_id, str) or not event_id:
        raise _ParseError("an event has no string EventId")
    resources = raw.get("Resources") or []
    if not isinstance(resources, list):
        raise _ParseError(f"event {event_id}: Resources must be a list")
    extra = {k: v for k, v in raw.items() if k not in _EVENT_KEYS}
    not_before_text = _text(raw.get("NotBefore"))
    try:
        not_before = parse_not_before(not_before_text)
    except ValueError:
        not_before = None  # an unknown date format: kept as text, never a crash
        extra["NotBefore"] = not_before_text
    duration = raw.get("DurationInSeconds")
    try:
        duration_seconds = -1 if duration is None else _int(duration, "DurationInSeconds")
    except _ParseError:
        duration_seconds = -1
        extra["DurationInSeconds"] = duration
    return Event(
        event_id=event_id,
        event_type=_known(EventType, _text(raw.get("EventType"))),
        status=_known(EventStatus, _text(raw.get("EventStatus"))),
        resource_type=_known(ResourceType, _text(raw.get("ResourceType") or "VirtualMachine")),
        resources=tuple(str(r) for r in resources),
        not_before=not_before,
        description=_text(raw.get("Description")),
        source=_known(EventSource, _text(raw.get("EventSource") or "Platform")),
        duration_seconds=duration_seconds,
        extra=MappingProxyType(extra) if extra else _EMPTY,
    )


def _json(body: bytes | str, what: str) -> dict[str, Any]:
    try:
        raw = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise _ParseError(f"{what} is not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise _ParseError(f"{what} must be a JSON object")
    return raw


def parse_document(body: bytes | str, *, etag: str | None = None) -> Document:
    """A document of any api-version (or of real Azure); ValueError when it is none."""
    raw = _json(body, "the document")
    if "DocumentIncarnation" not in raw and "Events" not in raw:
        raise _ParseError("not a Scheduled Events document (no DocumentIncarnation, no Events)")
    incarnation = _int(raw.get("DocumentIncarnation", 0), "DocumentIncarnation")
    events = raw.get("Events") or []
    if not isinstance(events, list):
        raise _ParseError("Events must be a list")
    extra = {k: v for k, v in raw.items() if k not in _DOCUMENT_KEYS}
    return Document(
        incarnation=incarnation,
        events=tuple(_event(e) for e in events),
        etag=etag,
        extra=MappingProxyType(extra) if extra else _EMPTY,
    )


def _optional_int(value: Any) -> int | None:
    try:
        return None if value in (None, "") else _int(value, "domain")
    except _ParseError:
        return None


def parse_instance(body: bytes | str) -> Instance:
    """``/metadata/instance`` (IMDS sends numbers as strings and "" for unset values)."""
    raw = _json(body, "the instance metadata")
    compute = raw.get("compute")
    if not isinstance(compute, dict) or not isinstance(compute.get("name"), str):
        raise _ParseError("instance metadata without compute.name")

    def text(key: str) -> str | None:
        value = compute.get(key)
        return str(value) if value not in (None, "") else None

    return Instance(
        compute_name=compute["name"],
        vm_id=text("vmId"),
        vm_scale_set_name=text("vmScaleSetName"),
        platform_update_domain=_optional_int(compute.get("platformUpdateDomain")),
        platform_fault_domain=_optional_int(compute.get("platformFaultDomain")),
        zone=text("zone"),
        location=text("location"),
        raw=MappingProxyType(raw),
    )


def diff_documents(previous: Document | None, current: Document) -> DocumentChange:
    """Events added, updated (any field changed) and removed between two documents.

    Ids are compared ignoring case, as the endpoint compares them.
    """
    before = {e.event_id.lower(): e for e in (previous.events if previous else ())}
    after = {e.event_id.lower(): e for e in current.events}
    return DocumentChange(
        document=current,
        added=tuple(e for k, e in after.items() if k not in before),
        updated=tuple(e for k, e in after.items() if k in before and before[k] != e),
        removed=tuple(e for k, e in before.items() if k not in after),
        previous=previous,
    )
