"""JSON views of the fabric's records, and the API's answers to routing errors and crashes."""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from forewarn.control.schemas import EventOut, OperationOut
from forewarn.fabric import EventRecord, OperationRecord

__all__ = [
    "crash",
    "ended_out",
    "event_out",
    "http_error",
    "hung_up",
    "json_error",
    "not_utf8",
    "operation_out",
    "shorten",
]

#: Characters of an error message; what a client sent is never echoed back whole.
MESSAGE_MAX = 1000


def not_utf8(raw: bytes) -> bool:
    """Whether a body msgspec refused is not UTF-8, which the 400 then says (msgspec
    reports bad UTF-8 as a ``DecodeError`` like any other fault, inside strings or not)."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def shorten(message: str, limit: int = MESSAGE_MAX) -> str:
    """``message``, cut to ``limit`` characters (saying how much was left out)."""
    if len(message) <= limit:
        return message
    return f"{message[:limit]}... ({len(message) - limit} more characters)"


def json_error(message: str, status: int) -> Response:
    """The one error shape: ``{"error": message}``, at most ``MESSAGE_MAX`` characters."""
    body = msgspec.json.encode({"error": shorten(message)})
    return Response(body, status, media_type="application/json")


def event_out(event: EventRecord) -> EventOut:
    """The API view of an event."""
    return EventOut(
        id=event.id,
        operation_id=event.operation_id,
        scope=event.scope_id,
        type=event.event_type.value,
        source=event.source.value,
        status=event.status.value,
        resources=list(event.resources),
        description=event.description,
        duration_seconds=event.duration_seconds,
        created_at=event.created_at,
        not_before=None if event.started_at is not None else event.not_before,
        approved_by=event.approved_by,
        started_at=event.started_at,
        approved_via=event.approved_via,
    )


def operation_out(op: OperationRecord) -> OperationOut:
    """The API view of an operation."""
    return OperationOut(
        id=op.id,
        kind=op.kind,
        target=op.target,
        vms=list(op.vms),
        state=op.state.value,
        created_at=op.created_at,
        not_before=op.not_before,
        started_at=op.started_at,
        ended_at=op.ended_at,
        remove_at=op.remove_at,
        event_ids=list(op.event_ids),
        unnotified=list(op.unnotified),
        rollout_id=op.rollout_id,
        via=op.via,
    )


def ended_out(event: EventRecord, status: str) -> dict[str, Any]:
    """A removed event's last view, with how it ended."""
    out: dict[str, Any] = msgspec.to_builtins(event_out(event))
    out["status"] = status
    return out


async def http_error(request: Request, exc: Exception) -> Response:
    """Routing errors (404, 405) in the API's JSON error shape."""
    assert isinstance(exc, HTTPException)
    headers = dict(exc.headers or {})
    if exc.status_code == 404:
        message = f"no such route: {request.url.path} (the API is under /api/v1; see /openapi.json)"
    elif exc.status_code == 405:
        allowed = sorted({m.strip() for m in headers.get("Allow", "").split(",") if m.strip()})
        headers["Allow"] = ", ".join(allowed)
        message = (
            f"{request.method} is not allowed on {request.url.path}; allowed: {headers['Allow']}"
        )
    else:
        message = str(exc.detail)
    return Response(
        msgspec.json.encode({"error": shorten(message)}),
        exc.status_code,
        headers=headers,
        media_type="application/json",
    )


async def hung_up(request: Request, exc: Exception) -> Response:
    """A client that hung up in the middle of its request is a normal event, not a crash
    (no traceback in the log); nobody is left to read the answer."""
    del request, exc
    return Response(status_code=499)


async def crash(request: Request, exc: Exception) -> Response:
    """A fault of the server itself; details go to the log, not to the client."""
    return json_error("internal server error; the server log has the details", 500)
