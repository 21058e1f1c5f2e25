"""``/metadata/identity/oauth2/token``: every VM's system-assigned managed identity, as
Azure's metadata endpoint hands it to ``ManagedIdentityCredential``, MSAL and
``az login --identity``; the token names the VM, so ARM knows who is calling.

Errors are the identity endpoint's own (``{"error", "error_description"}``, 400), not the
rest of the metadata service's.
"""

from __future__ import annotations

import time

import msgspec

from forewarn.fleet import VM
from forewarn.fleet.azure import AzureNames
from forewarn.imds.messages import Reply
from forewarn.imds.tokens import TokenSigner, identity_client_id, object_id

__all__ = ["IDENTITY_TOKEN", "IDENTITY_VERSIONS", "ManagedIdentity"]

IDENTITY_TOKEN = "/metadata/identity/oauth2/token"
#: The api-versions the identity endpoint documents.
IDENTITY_VERSIONS = frozenset({"2018-02-01", "2019-08-01", "2019-11-01", "2021-02-01"})


def _error(description: str, code: str = "invalid_request", status: int = 400) -> Reply:
    return Reply(status, msgspec.json.encode({"error": code, "error_description": description}))


_NO_HEADER = _error("Required metadata header not specified")
_NO_VERSION = _error("Required query variable 'api-version' is missing")
_BAD_VERSION = _error("Invalid API version")
_NO_RESOURCE = _error("Required query variable 'resource' is missing")
_NOT_FOUND = _error("Identity not found")


class ManagedIdentity:
    """The token route of one fleet: each VM's identity, signed by ``signer``."""

    def __init__(self, names: AzureNames, signer: TokenSigner) -> None:
        self.names = names
        self.signer = signer

    def reply(self, vm: VM, query: dict[str, str], metadata_ok: bool) -> Reply:
        """The answer to a GET of the token route by ``vm``."""
        if not metadata_ok:
            return _NO_HEADER
        version = query.get("api-version")
        if not version:
            return _NO_VERSION
        if version not in IDENTITY_VERSIONS:
            return _BAD_VERSION
        resource = query.get("resource", "").strip()
        if not resource:
            return _NO_RESOURCE
        if len(resource) > 512:
            return _error("The resource is longer than 512 characters.")
        client_id = identity_client_id(vm.vm_id)
        principal = object_id(f"vm:{vm.vm_id}")
        resource_id = self.names.vm_id(vm.name)
        asked = [query.get(k) for k in ("client_id", "object_id", "msi_res_id", "mi_res_id")]
        known = (client_id, principal, resource_id.lower())
        if any(a and (a.lower() if a.startswith("/") else a) not in known for a in asked):
            return _NOT_FOUND  # a user-assigned identity: none is assigned here
        now = time.time()
        token, expires_on = self.signer.mint(
            resource=resource,
            client_id=client_id,
            object_id=principal,
            vm_resource_id=resource_id,
            now=now,
        )
        body = {
            "access_token": token,
            "client_id": client_id,
            "expires_in": str(expires_on - int(now)),
            "expires_on": str(expires_on),
            "ext_expires_in": str(expires_on - int(now)),
            "not_before": str(int(now)),
            "resource": resource,
            "token_type": "Bearer",
        }
        return Reply(200, msgspec.json.encode(body))
