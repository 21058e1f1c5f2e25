"""Tolerant parsing of documents and StartRequests.

Documents: real payloads differ by version and era (string incarnations in old samples,
missing newer fields), so parsing accepts them all. StartRequests: the endpoint rejects
a malformed body whole, naming the problem.
"""

from __future__ import annotations

from typing import Any

import msgspec

from forewarn.contract.model import Document, Event, EventSource
from forewarn.contract.timefmt import parse_not_before

__all__ = ["DocumentFormatError", "StartRequestError", "parse_document", "parse_start_requests"]


class DocumentFormatError(ValueError):
    """A body that is not a Scheduled Events document."""


class StartRequestError(ValueError):
    """A StartRequests body that cannot be accepted; the message names the problem."""


def _int(value: Any, field: str) -> int:
    if isinstance(value, bool):
        raise DocumentFormatError(f"{field} must be an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise DocumentFormatError(f"{field} must be an integer, got {value!r}")


def _event(raw: Any) -> Event:
    if not isinstance(raw, dict):
        raise DocumentFormatError("each event must be an object")
    event_id = raw.get("EventId")
    if not isinstance(event_id, str):
        raise DocumentFormatError("event without a string EventId")
    resources = raw.get("Resources") or []
    if not isinstance(resources, list):
        raise DocumentFormatError("Resources must be a list")
    not_before_text = raw.get("NotBefore") or ""
    try:
        not_before = parse_not_before(str(not_before_text))
    except ValueError:
        raise DocumentFormatError(f"unparseable NotBefore {not_before_text!r}") from None
    duration = raw.get("DurationInSeconds", -1)
    return Event(
        event_id=event_id,
        status=str(raw.get("EventStatus", "")),
        event_type=str(raw.get("EventType", "")),
        resource_type=str(raw.get("ResourceType", "VirtualMachine")),
        resources=tuple(str(r) for r in resources),
        not_before=not_before,
        description=str(raw.get("Description") or ""),
        source=str(raw.get("EventSource") or EventSource.PLATFORM.value),
        duration_seconds=_int(duration, "DurationInSeconds") if duration is not None else -1,
    )


def parse_document(body: bytes | str) -> Document:
    """Parse a document from any api-version (and from real Azure)."""
    try:
        raw = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise DocumentFormatError(f"not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise DocumentFormatError("a document must be a JSON object")
    incarnation = _int(raw.get("DocumentIncarnation", 0), "DocumentIncarnation")
    events = raw.get("Events") or []
    if not isinstance(events, list):
        raise DocumentFormatError("Events must be a list")
    return Document(incarnation=incarnation, events=tuple(_event(e) for e in events))


def parse_start_requests(body: bytes | str) -> list[str]:
    """The EventIds a POST asks to start, in order, or StartRequestError.

    A ``DocumentIncarnation`` key (integer or string) is tolerated and ignored. Every
    malformed body, however hostile (bad UTF-8, deep nesting), is a StartRequestError, so
    the endpoint answers 400 and never 500.
    """
    try:
        if isinstance(body, str):
            body = body.encode()
        body.decode()  # a clear message for bad UTF-8 anywhere, not only inside strings
    except UnicodeError:
        raise StartRequestError("Request body is not valid UTF-8") from None
    body = body.removeprefix(b"\xef\xbb\xbf")  # Windows tools may prefix a UTF-8 BOM
    if not body.strip():
        raise StartRequestError('Request body is empty; expected {"StartRequests": [...]}')
    try:
        raw = msgspec.json.decode(body)
    except msgspec.DecodeError:
        raise StartRequestError("Request body is not valid JSON") from None
    except RecursionError:  # msgspec's own depth guard: nothing was built, nothing to undo
        raise StartRequestError("Request body is nested too deeply") from None
    if not isinstance(raw, dict):
        raise StartRequestError("Request body must be a JSON object")
    requests = raw.get("StartRequests")
    if requests is None:
        raise StartRequestError("StartRequests is missing")
    if not isinstance(requests, list):
        raise StartRequestError("StartRequests must be a list")
    if not requests:
        raise StartRequestError("StartRequests is empty")
    ids: list[str] = []
    for index, entry in enumerate(requests):
        if not isinstance(entry, dict):
            raise StartRequestError(f"StartRequests[{index}] must be an object")
        event_id = entry.get("EventId")
        if not isinstance(event_id, str) or not event_id.strip():
            raise StartRequestError(f"StartRequests[{index}] has no string EventId")
        ids.append(event_id.strip())
    return ids
