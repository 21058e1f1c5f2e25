"""Tolerant parsing of documents and instance metadata (StartRequests: ``startrequests``).

Real payloads differ by version and era (string incarnations, fields absent in older
api-versions, ISO dates in old samples), so parsing accepts them all and keeps what it
does not know (future types as strings, unknown keys and odd values in ``extra``); only a
body that is not a document at all is a DocumentFormatError: bytes that are not UTF-8,
not JSON, NaN or a number beyond a float, a lone surrogate, nesting too deep.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from types import MappingProxyType
from typing import Any, TypeVar

from forewarn.contract.model import (
    EMPTY_EXTRA,
    EVENT_KEYS,
    Document,
    Event,
    EventSource,
    EventStatus,
    EventType,
    Instance,
    ResourceType,
)
from forewarn.contract.timefmt import parse_not_before

__all__ = ["DocumentFormatError", "json_value", "parse_document", "parse_instance"]

_E = TypeVar("_E", bound=StrEnum)

_EVENT_KEYS = frozenset(EVENT_KEYS)
_DOCUMENT_KEYS = frozenset({"DocumentIncarnation", "Events"})


class DocumentFormatError(ValueError):
    """A body that is not a Scheduled Events document (or not instance metadata)."""


def _known(enum: type[_E], value: str) -> _E | str:
    """The enum member for ``value``, or ``value`` itself when this library does not know it."""
    try:
        return enum(value)
    except ValueError:
        return value


def _int(value: Any, name: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise DocumentFormatError(f"{name} must be an integer, got {value!r}")


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _event(raw: Any) -> Event:
    if not isinstance(raw, dict):
        raise DocumentFormatError("each event must be a JSON object")
    event_id = raw.get("EventId")
    if not isinstance(event_id, str) or not event_id:
        raise DocumentFormatError("an event has no string EventId")
    resources = raw.get("Resources") or []
    if not isinstance(resources, list):
        raise DocumentFormatError(f"event {event_id}: Resources must be a list")
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
    except DocumentFormatError:
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
        extra=MappingProxyType(extra) if extra else EMPTY_EXTRA,
    )


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _float(text: str) -> float:
    value = float(text)
    if value in (_INFINITY, -_INFINITY):
        raise ValueError(f"number out of range: {text[:40]}")
    return value


_INFINITY = float("inf")
_DECODER = json.JSONDecoder(parse_float=_float, parse_constant=_constant)
#: A ``\\u`` escape of a surrogate: only then can the decoded text hold a lone one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def json_value(body: bytes | str) -> Any:
    """The JSON value of ``body`` (UTF-8 bytes, or text); ValueError saying why not
    (NaN, a number beyond a float and a lone surrogate are no JSON either)."""
    try:
        text = body if isinstance(body, str) else str(body, "utf-8")
        value = _DECODER.decode(text)
    except UnicodeError:
        raise ValueError("not valid UTF-8") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{exc.msg} (character {exc.pos})") from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if _SURROGATE_ESCAPE.search(text):  # a lone one is text no UTF-8 can hold
        try:
            json.dumps(value, ensure_ascii=False).encode()
        except UnicodeEncodeError:
            raise ValueError("a lone surrogate in a string") from None
    return value


def _json(body: bytes | str, what: str) -> dict[str, Any]:
    try:
        raw = json_value(body)
    except ValueError as exc:
        raise DocumentFormatError(f"{what} is not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise DocumentFormatError(f"{what} must be a JSON object")
    return raw


def parse_document(body: bytes | str, *, etag: str | None = None) -> Document:
    """A document of any api-version (or of real Azure); DocumentFormatError when it is none."""
    raw = _json(body, "the document")
    if "DocumentIncarnation" not in raw and "Events" not in raw:
        raise DocumentFormatError(
            "not a Scheduled Events document (no DocumentIncarnation, no Events)"
        )
    incarnation = _int(raw.get("DocumentIncarnation", 0), "DocumentIncarnation")
    events = raw.get("Events") or []
    if not isinstance(events, list):
        raise DocumentFormatError("Events must be a list")
    extra = {k: v for k, v in raw.items() if k not in _DOCUMENT_KEYS}
    return Document(
        incarnation=incarnation,
        events=tuple(_event(e) for e in events),
        etag=etag,
        extra=MappingProxyType(extra) if extra else EMPTY_EXTRA,
    )


def _optional_int(value: Any) -> int | None:
    try:
        return None if value in (None, "") else _int(value, "domain")
    except DocumentFormatError:
        return None


def parse_instance(body: bytes | str) -> Instance:
    """``/metadata/instance`` (IMDS sends numbers as strings and "" for unset values)."""
    raw = _json(body, "the instance metadata")
    compute = raw.get("compute")
    if not isinstance(compute, dict) or not isinstance(compute.get("name"), str):
        raise DocumentFormatError("instance metadata without compute.name")

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
