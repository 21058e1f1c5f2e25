"""Rendering a document for one api-version: field gating, type gating, key order."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from forewarn.contract.model import RESOURCE_TYPE, EventStatus
from forewarn.contract.timefmt import format_rfc1123
from forewarn.contract.versions import ApiVersion, EventType

__all__ = ["RenderableEvent", "render_document"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderableEvent:
    """What the renderer needs of an event; NotBefore as a POSIX timestamp."""

    event_id: str
    status: EventStatus
    event_type: EventType
    resources: tuple[str, ...]
    not_before: float
    description: str
    source: str
    duration_seconds: int


def _event_dict(event: RenderableEvent, version: ApiVersion, underscore: bool) -> dict[str, Any]:
    resources = [f"_{r}" for r in event.resources] if underscore else list(event.resources)
    started = event.status is EventStatus.STARTED
    out: dict[str, Any] = {
        "EventId": event.event_id,
        "EventStatus": event.status.value,
        "EventType": event.event_type.value,
        "ResourceType": RESOURCE_TYPE,
        "Resources": resources,
        "NotBefore": "" if started else format_rfc1123(event.not_before),
    }
    if version.has_description:
        out["Description"] = event.description
    if version.has_event_source:
        out["EventSource"] = event.source
    if version.has_duration:
        out["DurationInSeconds"] = event.duration_seconds
    return out


def render_document(
    incarnation: int,
    events: Iterable[RenderableEvent],
    version: ApiVersion,
    *,
    role_instances: bool = False,
) -> bytes:
    """Compact JSON of the document as ``version`` shows it.

    Events whose type is newer than ``version`` are left out. ``role_instances`` is
    True for cloud services, whose names never get the 2017-03-01 underscore.
    """
    underscore = version.underscore_iaas_names and not role_instances
    body = {
        "DocumentIncarnation": incarnation,
        "Events": [
            _event_dict(e, version, underscore)
            for e in events
            if e.event_type in version.event_types
        ],
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
