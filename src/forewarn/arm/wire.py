"""What every ARM request goes through: api-version, bearer token, a bounded JSON body,
and answers with ``x-ms-request-id``."""

from __future__ import annotations

import hmac
import json
import re
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from forewarn.arm.errors import ArmError

__all__ = [
    "COMPUTE_VERSIONS",
    "MAINTENANCE_VERSIONS",
    "MAX_BODY",
    "answer",
    "check_api_version",
    "check_token",
    "read_json",
]

#: The api-versions ARM accepts here, oldest and newest (both inclusive, compared as dates).
COMPUTE_VERSIONS = ("2015-06-15", "2026-04-01")
MAINTENANCE_VERSIONS = ("2023-10-01", "2025-11-01")
#: The largest request body read (ARM's own limit is larger, but nothing here needs it).
MAX_BODY = 1 << 20
_VERSION = re.compile(r"^(\d{4}-\d{2}-\d{2})(-preview)?$")


def answer(body: Any = None, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """A JSON answer (no body for 202/204 without one) with ARM's request id."""
    out = {"x-ms-request-id": str(uuid.uuid4()), **(headers or {})}
    if body is None:
        return Response(status_code=status, headers=out)
    data = json.dumps(body, separators=(",", ":")).encode()
    return Response(data, status_code=status, headers=out, media_type="application/json")


def error(exc: ArmError) -> Response:
    return answer(exc.body(), exc.status)


def check_api_version(request: Request, versions: tuple[str, str], kind: str) -> str:
    """The request's api-version, or the 400 ARM answers when it is missing or unknown."""
    version = request.query_params.get("api-version")
    if not version:
        raise ArmError(
            400,
            "MissingApiVersionParameter",
            "The api-version query parameter (?api-version=) is required for all requests.",
        )
    match = _VERSION.match(version)
    if match is None or not versions[0] <= match.group(1) <= versions[1]:
        shown = version if len(version) <= 40 else version[:40] + "..."
        raise ArmError(
            400,
            "NoRegisteredProviderFound",
            f"No registered resource provider found for API version '{shown}' and type "
            f"'{kind}'. The supported api-versions are {versions[0]} to {versions[1]}.",
        )
    return version


def check_token(request: Request, token: str | None) -> None:
    """Any bearer token, or exactly ``token`` when one is configured."""
    header = request.headers.get("authorization", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        raise ArmError(
            401,
            "AuthenticationFailed",
            "Authentication failed. The 'Authorization' header is missing or not a Bearer token.",
        )
    if token is not None and not hmac.compare_digest(given.strip().encode(), token.encode()):
        raise ArmError(401, "InvalidAuthenticationToken", "The access token is invalid.")


async def read_json(request: Request, *, required: bool = False) -> dict[str, Any]:
    """The request's JSON object body, at most ``MAX_BODY`` bytes; ``{}`` when empty and
    not ``required``."""
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > MAX_BODY:
        raise _too_large()
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise _too_large()
    if not raw.strip():
        if required:
            raise ArmError(400, "InvalidRequestContent", "The request content is required.")
        return {}
    try:
        text = bytes(raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ArmError(
            400, "InvalidRequestContent", f"The request content is not UTF-8 (byte {exc.start})."
        ) from None
    try:
        body = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        raise ArmError(
            400, "InvalidRequestContent", f"The request content is not valid JSON: {why}."
        ) from None
    if not isinstance(body, dict):
        raise ArmError(400, "InvalidRequestContent", "The request content must be a JSON object.")
    return body


def _too_large() -> ArmError:
    return ArmError(
        413, "RequestEntityTooLarge", f"The request content is larger than {MAX_BODY} bytes."
    )
