"""The Microsoft identity platform routes ``ClientSecretCredential`` and the Azure CLI's
``az login --service-principal`` call, so that a client pointed at forewarn (the ARM URL
as its authority, instance discovery off) gets a token the ARM routes accept.

``GET /{tenant}/v2.0/.well-known/openid-configuration`` tells MSAL where the token
endpoint is; ``POST /{tenant}/oauth2/v2.0/token`` (a client credentials grant) answers a
token signed for that client (``tokens.TokenSigner``). When ARM requires a token, the
client must prove it may have one: its secret must be the configured client secret (or,
when none is configured, the ARM token itself). Errors are the identity platform's
(``{"error", "error_description"}``), not ARM's.
"""

from __future__ import annotations

import hmac
import json
import time
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import Response

from forewarn.arm.paths import ArmPath
from forewarn.arm.wire import MAX_BODY, base_url
from forewarn.fleet.azure import TENANT
from forewarn.imds.tokens import TokenSigner, object_id

__all__ = ["Identity"]

#: The routes after the tenant (lower-cased segments).
_CONFIGURATION = ("v2.0", ".well-known", "openid-configuration")
_TOKEN = ("oauth2", "v2.0", "token")


class Identity:
    """The token routes of one ARM listener (``token``: the one ARM requires, or None;
    ``client_secret``: the secret a client must present when a token is required)."""

    def __init__(
        self, signer: TokenSigner, *, token: str | None = None, client_secret: str | None = None
    ) -> None:
        self.signer = signer
        self.token = token
        self.client_secret = client_secret or token

    @staticmethod
    def handles(path: ArmPath) -> bool:
        """Whether a path is one of these routes (a tenant, then the route)."""
        segments = tuple(path.text.lower().split("/")[2:])
        return segments in (_CONFIGURATION, _TOKEN)

    async def answer(self, request: Request, path: ArmPath) -> Response:
        tenant = path.text.split("/")[1]
        if tuple(path.text.lower().split("/")[2:]) == _CONFIGURATION:
            if request.method != "GET":
                return _error(405, "invalid_request", "Use GET for the OpenID configuration.")
            return _json(self._configuration(request, tenant))
        if request.method != "POST":
            return _error(405, "invalid_request", "Use POST to ask for a token.")
        return await self._token(request)

    def _configuration(self, request: Request, tenant: str) -> dict[str, object]:
        # Any tenant name (a domain, "organizations") resolves to forewarn's one tenant,
        # as a domain resolves to its tenant's id in Entra ID.
        del tenant
        base = f"{base_url(request)}/{TENANT}"
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
        if self.client_secret is not None and not hmac.compare_digest(
            form["client_secret"].encode(), self.client_secret.encode()
        ):
            return _error(
                401,
                "invalid_client",
                "AADSTS7000215: Invalid client secret provided. Ensure the secret being sent "
                "in the request is the client secret value.",
            )
        client_id = form["client_id"][:200]
        resource = form["scope"].split()[0].removesuffix(".default").removesuffix("/") + "/"
        token, expires_on = self.signer.mint(
            resource=resource,
            client_id=client_id,
            object_id=object_id(f"app:{client_id}"),
        )
        lifetime = max(0, expires_on - int(time.time()))
        return _json({
            "token_type": "Bearer",
            "expires_in": lifetime,
            "ext_expires_in": lifetime,
            "access_token": token,
        })  # fmt: skip


def _json(body: object, status: int = 200) -> Response:
    headers = {"Cache-Control": "no-store", "Pragma": "no-cache"}
    return Response(
        json.dumps(body), status_code=status, headers=headers, media_type="application/json"
    )


def _error(status: int, code: str, description: str) -> Response:
    return _json({"error": code, "error_description": description}, status)
