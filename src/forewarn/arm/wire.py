"""What every ARM request goes through: api-version, bearer token (and who it names), a
bounded JSON body, and answers with ``x-ms-request-id``."""

from __future__ import annotations

import hmac
import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from forewarn.arm.errors import ArmError
from forewarn.arm.paths import ArmPath
from forewarn.fleet.azure import AzureNames
from forewarn.imds.tokens import Caller, InvalidToken, TokenSigner

__all__ = [
    "COMPUTE_VERSIONS",
    "MAINTENANCE_VERSIONS",
    "MAX_BODY",
    "Call",
    "answer",
    "authenticate",
    "base_url",
    "check_api_version",
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


@dataclass(slots=True)
class Call:
    """One routed request: the request, its parsed path, who the token names (None: a
    bearer string that names nobody) and, once checked, its api-version."""

    request: Request
    path: ArmPath
    caller: Caller | None
    names: AzureNames
    version: str = ""

    @property
    def caller_vm(self) -> str | None:
        """The fleet VM whose managed identity is calling, or None."""
        if self.caller is None or self.caller.vm_resource_id is None:
            return None
        return self.names.vm_of_resource_id(self.caller.vm_resource_id)


def base_url(request: Request) -> str:
    """This listener as its client reached it (``https://host:port``): what the answers'
    links and the cloud's endpoints name."""
    return f"{request.url.scheme}://{request.url.netloc}"


def error(exc: ArmError, method: str = "GET") -> Response:
    """ARM's error answer (no body for HEAD)."""
    headers = dict(exc.headers)
    if method == "HEAD":
        return answer(status=exc.status, headers=headers)
    return answer(exc.body(), exc.status, headers)


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


def authenticate(
    request: Request, token: str | None, signer: TokenSigner, login_url: str
) -> Caller | None:
    """Who is calling: a token forewarn signed names its caller; any other bearer string
    passes when no token is required, or must be exactly ``token``. A 401 carries ARM's
    ``WWW-Authenticate`` challenge, naming where to get a token (``login_url``)."""
    header = request.headers.get("authorization", "")
    scheme, _, given = header.partition(" ")
    given = given.strip()
    if scheme.lower() != "bearer" or not given:
        raise _unauthorized(
            login_url,
            "AuthenticationFailed",
            "Authentication failed. The 'Authorization' header is missing or not a Bearer token.",
        )
    try:
        caller = signer.verify(given)
    except InvalidToken as exc:
        raise _unauthorized(login_url, exc.code, str(exc)) from None
    if caller is not None:
        return caller
    if token is not None and not hmac.compare_digest(given.encode(), token.encode()):
        raise _unauthorized(login_url, "InvalidAuthenticationToken", "The access token is invalid.")
    return None


def _unauthorized(login_url: str, code: str, message: str) -> ArmError:
    challenge = (
        f'Bearer authorization_uri="{login_url}/", error="invalid_token", '
        f'error_description="{message}"'
    )
    return ArmError(401, code, message, headers={"WWW-Authenticate": challenge})


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
    except (json.JSONDecodeError, RecursionError, ValueError) as exc:
        # (a plain ValueError: an integer of over 4,300 digits)
        why = (
            exc.msg
            if isinstance(exc, json.JSONDecodeError)
            else "nested too deeply"
            if isinstance(exc, RecursionError)
            else "a number is too long"
        )
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
