"""What the agent reads of an event, and how handlers receive it.

``EventView`` is the part of ``forewarn.client.Event`` the agent relies on, so rules and
handlers can be read (and tested) without an endpoint. ``wire_event`` gives handlers the
event as the endpoint wrote it; ``event_env`` the same as ``FOREWARN_*`` variables.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from forewarn.contract import format_rfc1123, parse_not_before, resource_matches

__all__ = ["EventView", "StoredEvent", "event_env", "stored_event", "wire_event"]


class EventView(Protocol):
    """The fields of a Scheduled Event the agent decides on."""

    @property
    def event_id(self) -> str: ...
    @property
    def event_type(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def resource_type(self) -> str: ...
    @property
    def resources(self) -> tuple[str, ...]: ...
    @property
    def not_before(self) -> datetime | None: ...
    @property
    def description(self) -> str: ...
    @property
    def duration_seconds(self) -> int: ...
    def affects(self, vm_name: str) -> bool: ...


def wire_event(event: EventView) -> dict[str, Any]:
    """The event in its wire form (keys and values as the endpoint sends them)."""
    extra: Mapping[str, Any] = getattr(event, "extra", None) or {}
    not_before = event.not_before
    return {
        "EventId": event.event_id,
        "EventStatus": str(event.status),
        "EventType": str(event.event_type),
        "ResourceType": str(event.resource_type),
        "Resources": list(event.resources),
        "NotBefore": format_rfc1123(not_before.timestamp()) if not_before else "",
        "Description": event.description,
        "EventSource": str(event.source),
        "DurationInSeconds": event.duration_seconds,
        **{k: v for k, v in extra.items() if isinstance(k, str)},
    }


def event_env(
    event: EventView, vm_name: str, phase: str, deadline: datetime | None
) -> dict[str, str]:
    """``FOREWARN_*`` variables an exec handler gets (strings only, lists comma-joined)."""
    not_before = event.not_before
    return {
        "FOREWARN_EVENT_ID": event.event_id,
        "FOREWARN_EVENT_TYPE": str(event.event_type),
        "FOREWARN_EVENT_STATUS": str(event.status),
        "FOREWARN_EVENT_SOURCE": str(event.source),
        "FOREWARN_RESOURCE_TYPE": str(event.resource_type),
        "FOREWARN_RESOURCES": ",".join(event.resources),
        "FOREWARN_NOT_BEFORE": format_rfc1123(not_before.timestamp()) if not_before else "",
        "FOREWARN_NOT_BEFORE_EPOCH": f"{not_before.timestamp():.0f}" if not_before else "",
        "FOREWARN_DESCRIPTION": event.description,
        "FOREWARN_DURATION_SECONDS": str(event.duration_seconds),
        "FOREWARN_VM_NAME": vm_name,
        "FOREWARN_PHASE": phase,
        "FOREWARN_DEADLINE_EPOCH": f"{deadline.timestamp():.3f}" if deadline else "",
    }


class StoredEvent(NamedTuple):
    """An event rebuilt from the agent's state file (it may have left the document)."""

    event_id: str
    event_type: str
    status: str
    source: str
    resource_type: str
    resources: tuple[str, ...]
    not_before: datetime | None
    description: str
    duration_seconds: int

    def affects(self, vm_name: str) -> bool:
        return any(resource_matches(r, vm_name) for r in self.resources)


def stored_event(wire: Mapping[str, Any]) -> StoredEvent:
    """The ``StoredEvent`` for a dict ``wire_event`` wrote."""
    try:
        not_before = parse_not_before(str(wire.get("NotBefore") or ""))
    except ValueError:
        not_before = None
    return StoredEvent(
        event_id=str(wire["EventId"]),
        event_type=str(wire.get("EventType", "")),
        status=str(wire.get("EventStatus", "")),
        source=str(wire.get("EventSource", "")),
        resource_type=str(wire.get("ResourceType", "VirtualMachine")),
        resources=tuple(str(r) for r in wire.get("Resources", ())),
        not_before=not_before,
        description=str(wire.get("Description", "")),
        duration_seconds=int(wire.get("DurationInSeconds", -1)),
    )
