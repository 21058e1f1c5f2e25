"""The Microsoft identity platform routes ``ClientSecretCredential`` calls, so that
azure-identity pointed at forewarn (``authority=<the ARM URL>``,
``disable_instance_discovery=True``) gets a token the ARM routes accept.

``GET /{tenant}/v2.0/.well-known/openid-configuration`` tells MSAL where the token
endpoint is; ``POST /{tenant}/oauth2/v2.0/token`` (a client credentials grant) answers
the configured ARM token, or, when any token is accepted, a fresh opaque one. Errors are
the identity platform's (``{"error", "error_description"}``), not ARM's.
"""

from __future__ import annotations

import json
import secrets
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import Response

from forewarn.arm.wire import MAX_BODY

__all__ = ["Identity"]

_LIFETIME = 3599


class Identity:
    """The token routes of one ARM listener (``token``: the one ARM requires, or None)."""

    def __init__(self, token: str | None) -> None:
        self.token = token

    @staticmethod
    def handles(low: list[str]) -> bool:
        """Whether a lower-cased path (its segments) is one of these routes."""
        return len(low) == 4 and (
            low[1:] == ["v2.0", ".well-known", "openid-configuration"]
            or low[1:] == ["oauth2", "v2.0", "token"]
        )

    async def answer(self, request: Request, raw: list[str]) -> Response:
        tenant = raw[0]
        if raw[1].lower() == "v2.0":
            if request.method != "GET":
                return _error(405, "invalid_request", "Use GET for the OpenID configuration.")
            return _json(self._configuration(request, tenant))
        if request.method != "POST":
            return _error(405, "invalid_request", "Use POST to ask for a token.")
        return await self._token(request)

    def _configuration(self, request: Request, tenant: str) -> dict[str, object]:
        base = f"{request.url.scheme}://{request.url.netloc}/{tenant}"
        return {
            "issuer": f"{base}/v2.0",
            "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
            "token_endpoint": f"{base}/oauth2/v2.0/token",
            "token_endpoint_auth_methods_supported": ["client_secret_post"],
            "grant_types_supported": ["client_credentials"],
            "response_types_supported": ["token"],
            "tenant_region_scope": None,
        }

    async def _token(self, request: Request) -> Response:
        raw = bytearray()
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > MAX_BODY:
                return _error(413, "invalid_request", f"The request is over {MAX_BODY} bytes.")
        try:
            form = {k: v[0] for k, v in parse_qs(bytes(raw).decode("utf-8")).items()}
        except UnicodeDecodeError:
            return _error(400, "invalid_request", "The request body is not UTF-8.")
        grant = form.get("grant_type")
        if grant != "client_credentials":
            return _error(
                400,
                "unsupported_grant_type",
                f"grant_type must be client_credentials, not {str(grant)[:40]!r}.",
            )
        for field in ("client_id", "client_secret", "scope"):
            if not form.get(field):
                return _error(400, "invalid_request", f"The request needs {field}.")
        token = self.token or f"forewarn-{secrets.token_urlsafe(24)}"
        return _json({
            "token_type": "Bearer",
            "expires_in": _LIFETIME,
            "ext_expires_in": _LIFETIME,
            "access_token": token,
        })  # fmt: skip


def _json(body: object, status: int = 200) -> Response:
    headers = {"Cache-Control": "no-store", "Pragma": "no-cache"}
    return Response(
        json.dumps(body), status_code=status, headers=headers, media_type="application/json"
    )


def _error(status: int, code: str, description: str) -> Response:
    return _json({"error": code, "error_description": description}, status)
