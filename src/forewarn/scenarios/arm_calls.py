"""ARM calls a scenario makes: HTTPS to the server's ARM listener, as azure-mgmt-compute
would send them, verified with forewarn's CA file. The scenarios layer speaks HTTP only
(it never imports the ARM app), so a scenario exercises the same surface users' code does.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

import httpx

from forewarn.scenarios.model import ScenarioError

__all__ = ["ARM_API_VERSION", "ArmAccess", "call_arm"]

#: The Compute api-version the calls carry (one azure-mgmt-compute sends).
ARM_API_VERSION = "2024-07-01"
#: A step's action -> the VM action path segment ARM takes.
_PATHS = {"restart": "restart", "redeploy": "redeploy", "reimage": "reimage"}


@dataclass(frozen=True, slots=True)
class ArmAccess:
    """Where the server's ARM listener is, the CA file to trust, and the fleet's
    subscription and resource group (as the server's ``ARM on ...`` line prints them)."""

    url: str
    ca: str
    subscription: str
    resource_group: str
    token: str = "forewarn"


def call_arm(access: ArmAccess, action: str, vm: str, timeout: float = 30.0) -> None:
    """POST ``action`` on ``vm`` through ARM; ScenarioError with ARM's own message when it
    refuses (404 ResourceNotFound, 409 OperationNotAllowed...) or cannot be reached."""
    path = (
        f"/subscriptions/{access.subscription}/resourceGroups/{access.resource_group}"
        f"/providers/Microsoft.Compute/virtualMachines/{vm}/{_PATHS[action]}"
    )
    try:
        context = ssl.create_default_context(cafile=access.ca)
    except OSError as exc:
        raise ScenarioError(f"cannot read the ARM CA file {access.ca}: {exc.strerror}") from None
    try:
        with httpx.Client(verify=context, timeout=timeout, trust_env=False) as client:
            response = client.post(
                access.url.rstrip("/") + path,
                params={"api-version": ARM_API_VERSION},
                headers={"Authorization": f"Bearer {access.token}"},
            )
    except httpx.HTTPError as exc:
        raise ScenarioError(f"ARM at {access.url} did not answer: {exc}") from None
    if response.status_code >= 400:
        try:
            error = response.json()["error"]
            detail = f"{error['code']}: {error['message']}"
        except (ValueError, KeyError, TypeError):
            detail = response.text[:200]
        raise ScenarioError(f"ARM {action} {vm}: {detail} (HTTP {response.status_code})")
