"""Access tokens: minted for a VM's managed identity (the metadata endpoint's
``/metadata/identity/oauth2/token``) or a service principal (ARM's identity routes), and
verified by the ARM listener, which learns from them who is calling.

A token is a JWT shaped as Microsoft Entra ID's (``tid``, ``oid``, ``appid``, ``aud``,
``exp``; a managed identity's carries its VM's resource id in ``xms_mirid``, as Azure's
does), signed with HMAC-SHA256 under a key every process of the fleet derives alike: from
the required ARM token when there is one (secret as it is), else from the subscription
(when any bearer token is accepted, a token guards nothing and only names the caller).
"""

from __future__ import annotations

import hashlib
import hmac
import time
import uuid
from dataclasses import dataclass

import jwt

from forewarn.fleet.azure import TENANT

__all__ = ["Caller", "InvalidToken", "TokenSigner", "identity_client_id", "object_id"]

#: How long a token is valid (seconds).
LIFETIME = 24 * 3600
_ALGORITHM = "HS256"
_NAMESPACE = uuid.UUID("a3b1c0de-5e1f-4d1e-8c0a-70c3e2f0f0e1")
#: Allowed skew between a token's times and the verifier's clock.
_LEEWAY = 300


class InvalidToken(Exception):
    """A token forewarn signed that no longer holds (expired, altered); ``code`` is ARM's."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def identity_client_id(vm_id: str) -> str:
    """The client id of a VM's system-assigned identity (stable: derived from the VM)."""
    return str(uuid.uuid5(_NAMESPACE, f"client:{vm_id}"))


def object_id(principal: str) -> str:
    """A principal's object id (stable: derived from ``principal``, e.g. ``vm:<vm id>``
    for a VM's identity, ``app:<client id>`` for a service principal)."""
    return str(uuid.uuid5(_NAMESPACE, f"object:{principal}"))


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a verified token says is calling: a VM's identity (``vm``: its resource id) or
    a service principal (``client_id``)."""

    client_id: str
    vm_resource_id: str | None = None


class TokenSigner:
    """Mints and verifies the fleet's tokens."""

    def __init__(self, secret: str) -> None:
        self._key = hmac.new(b"forewarn token signing", secret.encode(), hashlib.sha256).digest()

    @classmethod
    def for_fleet(cls, arm_token: str | None, subscription: str) -> TokenSigner:
        """The signer every process of a fleet agrees on (see the module's docstring)."""
        return cls(f"token:{arm_token}" if arm_token else f"open:{subscription}")

    def mint(
        self,
        *,
        resource: str,
        client_id: str,
        object_id: str,
        vm_resource_id: str | None = None,
        now: float | None = None,
    ) -> tuple[str, int]:
        """A token for ``resource`` (its audience) and when it expires (epoch seconds)."""
        issued = int(time.time() if now is None else now)
        claims: dict[str, object] = {
            "aud": resource,
            "iss": f"https://sts.windows.net/{TENANT}/",
            "iat": issued,
            "nbf": issued,
            "exp": issued + LIFETIME,
            "tid": TENANT,
            "oid": object_id,
            "sub": object_id,
            "appid": client_id,
            "appidacr": "2",
            "idtyp": "app",
            "ver": "1.0",
        }
        if vm_resource_id is not None:
            claims["xms_mirid"] = vm_resource_id
        return jwt.encode(claims, self._key, algorithm=_ALGORITHM), issued + LIFETIME

    def verify(self, token: str) -> Caller | None:
        """The caller a token of forewarn's names; None for a token that is no JWT of
        ours (any other bearer string); InvalidToken for one of ours that fails."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            return None
        if header.get("alg") != _ALGORITHM:
            return None
        try:
            claims = jwt.decode(
                token,
                self._key,
                algorithms=[_ALGORITHM],
                options={"verify_aud": False, "require": ["exp", "appid"]},
                leeway=_LEEWAY,
            )
        except jwt.ExpiredSignatureError:
            raise InvalidToken("ExpiredAuthenticationToken", "The access token expiry UTC time "
                               "is earlier than the current UTC time.") from None  # fmt: skip
        except jwt.InvalidTokenError:
            raise InvalidToken(
                "InvalidAuthenticationTokenSignature", "The access token has an invalid signature."
            ) from None
        mirid = claims.get("xms_mirid")
        return Caller(str(claims["appid"]), mirid if isinstance(mirid, str) else None)
