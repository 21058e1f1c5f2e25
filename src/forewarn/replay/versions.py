"""Rendering a replay's documents for every api-version from the versions recorded.

A recording holds the documents a VM was served at the api-versions it asked for. A
client of another version must get what the endpoint would have shown it (CONTRACT D5,
D7, D9-D12): event types newer than its version left out, fields newer than its version
absent, IaaS names with an underscore at 2017-03-01 only. So each version's documents are
rendered, with the contract's renderer, from the recorded ones that hold at least what
that version shows; a version nothing recorded can be rendered for is refused, with why.
A frame recorded at the version asked for is served as recorded, byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from forewarn.contract import (
    SUPPORTED_VERSIONS,
    ApiVersion,
    Event,
    EventStatus,
    EventType,
    RenderableEvent,
    lookup_version,
    render_document,
)
from forewarn.replay.recorded import Frame

__all__ = ["can_render", "recorded_version", "refusal", "render_frame", "renderable_frames"]

_NEWEST = lookup_version(SUPPORTED_VERSIONS[-1])
_UNTIL_2019 = lookup_version("2019-01-01")
_OLDEST = lookup_version(SUPPORTED_VERSIONS[0])
assert _NEWEST is not None and _UNTIL_2019 is not None and _OLDEST is not None

#: A cloud service's role instance (``FrontEnd_IN_0``): never underscored (D7).
_ROLE_INSTANCE = re.compile(r"_IN_\d+$")

_FIELDS = (
    ("has_description", "Description"),
    ("has_event_source", "EventSource"),
    ("has_duration", "DurationInSeconds"),
)


def _event_keys(body: bytes) -> list[set[str]]:
    document: Any = msgspec.json.decode(body)
    events = document.get("Events") if isinstance(document, dict) else None
    return [set(e) for e in events or () if isinstance(e, dict)]


def recorded_version(frame: Frame) -> ApiVersion | None:
    """The version ``frame`` was rendered for: its ``api_version``, or for a capture that
    names none, the newest whose fields its events carry (None: an empty document, the
    same at every version)."""
    if frame.api_version is not None:
        return lookup_version(frame.api_version)
    keys = _event_keys(frame.body)
    if not keys:
        return None
    present = set.intersection(*keys)
    for version in reversed([v for n in SUPPORTED_VERSIONS if (v := lookup_version(n))]):
        if all((name in present) == getattr(version, flag) for flag, name in _FIELDS):
            if not version.has_description and any(
                r.startswith("_") for e in frame.document.events for r in e.resources
            ):
                return _OLDEST
            return version
    return _UNTIL_2019


def can_render(source: ApiVersion | None, target: ApiVersion) -> bool:
    """Whether a document rendered for ``source`` holds all ``target`` shows."""
    if source is None or source is target:
        return True
    if not target.event_types <= source.event_types:
        return False  # the source left out events of types the target shows
    return all(getattr(source, flag) or not getattr(target, flag) for flag, _ in _FIELDS)


def _known(event: Event) -> bool:
    return event.event_type in set(EventType) and event.status in set(EventStatus)


def render_frame(frame: Frame, source: ApiVersion | None, target: ApiVersion) -> bytes | None:
    """``frame``'s document as ``target`` shows it (None: it holds what cannot be rendered
    again, an event status this version of forewarn does not know)."""
    if source is None and not frame.document.events:
        return frame.body
    if source is target:
        return frame.body
    events: list[RenderableEvent] = []
    for event in frame.document.events:
        if event.event_type not in set(EventType):
            continue  # a type newer than every version known: newer than the target (D5)
        if not _known(event):
            return None
        resources = tuple(
            r[1:] if source is _OLDEST and r.startswith("_") else r for r in event.resources
        )
        events.append(
            RenderableEvent(
                event_id=event.event_id,
                status=EventStatus(event.status),
                event_type=EventType(event.event_type),
                resources=resources,
                not_before=event.not_before.timestamp() if event.not_before else 0.0,
                description=event.description,
                source=str(event.source),
                duration_seconds=event.duration_seconds,
            )
        )
    roles = any(_ROLE_INSTANCE.search(r) for e in events for r in e.resources)
    return render_document(frame.incarnation, events, target, role_instances=roles)


@dataclass(frozen=True, slots=True)
class Rendered:
    """One frame as one version shows it."""

    frame: Frame
    body: bytes


def renderable_frames(frames: Sequence[Frame], target: ApiVersion) -> list[Rendered]:
    """``frames`` as ``target`` shows them, in time order (of two at one time, the one
    recorded at ``target`` wins)."""
    out: list[tuple[float, int, Rendered]] = []
    for frame in frames:
        source = recorded_version(frame)
        # a document without events is the same at every version, whichever it was
        # recorded at (``forewarn conformance`` records every version, one at a time)
        shown = source if frame.document.events else None
        if not can_render(shown, target):
            continue
        body = render_frame(frame, shown, target)
        if body is not None:
            out.append((frame.t, int(source is target), Rendered(frame, body)))
    out.sort(key=lambda item: (item[0], item[1]))
    return [rendered for _, _, rendered in out]


def refusal(frames: Sequence[Frame], target: ApiVersion) -> str:
    """Why no frame can be rendered for ``target`` (one sentence, for a 400)."""
    held = sorted({v.name for f in frames if (v := recorded_version(f)) is not None})
    wanted = [name for flag, name in _FIELDS if getattr(target, flag)]
    shows = f"{', '.join(wanted)} and " if wanted else ""
    types = ", ".join(sorted(target.event_types))
    return (
        f"this replay cannot render api-version {target.name}: the recording holds "
        f"{', '.join(held)}, which lack what {target.name} shows ({shows}events of types "
        f"{types}); ask for {' or '.join(held)}"
    )
