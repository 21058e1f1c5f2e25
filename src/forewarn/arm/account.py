"""What a client asks ARM before any resource: the cloud's endpoints (``az cloud
register``), the subscriptions and tenants a login finds (``az login``, ``az account``),
the resource group and the resources in it (``az group``, ``az resource list``).

forewarn serves one subscription of one tenant, holding one resource group: the fleet's
(``Topology.azure``, the names the metadata endpoint gives its VMs too).
"""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from forewarn.arm.errors import ArmError
from forewarn.arm.paging import page
from forewarn.arm.paths import ArmPath, shown_name
from forewarn.arm.render import Renderer
from forewarn.arm.resources import ArmFleet
from forewarn.arm.wire import Call, answer, base_url
from forewarn.fabric import Fabric
from forewarn.fleet.azure import TENANT

__all__ = ["AccountRoutes"]

#: The audiences a token for ARM may name (the CLI asks for the first).
AUDIENCES = ["https://management.core.windows.net/", "https://management.azure.com/"]
_DOMAIN = "forewarn.local"
_CLAUSE = re.compile(r"^\s*(\w+)\s+eq\s+'([^']{0,512})'\s*$", re.IGNORECASE)
_AND = re.compile(r"\s+and\s+", re.IGNORECASE)
#: The fields ``$filter`` compares (as ``az resource list`` sends them): the resource's
#: value for each, lower-cased.
_FIELDS = {
    "resourcegroup": lambda r: r["id"].split("/")[4].lower(),
    "resourcetype": lambda r: r["type"].lower(),
    "name": lambda r: r["name"].lower(),
    "location": lambda r: r["location"].lower(),
}


class AccountRoutes:
    """The cloud, account, group and generic-resource routes."""

    def __init__(self, fabric: Fabric, fleet: ArmFleet) -> None:
        self.fabric = fabric
        self.fleet = fleet
        self.render = Renderer(fabric, fleet)

    def cloud_metadata(self, request: Request, path: ArmPath) -> Response:
        """``GET /metadata/endpoints`` (no token): this ARM, and its identity routes as the
        cloud's login endpoint, in ARM's shape for every api-version."""
        if path.names[0].lower() != "endpoints" or request.method != "GET":
            raise ArmError(404, "NotFound", f"No ARM route here for {path.shown()}.")
        base = base_url(request)
        body = {
            "name": "forewarn",
            "portal": base,
            "resourceManager": base + "/",
            "authentication": {
                "loginEndpoint": base + "/",
                "audiences": AUDIENCES,
                "tenant": "common",
                "identityProvider": "AAD",
            },
            "gallery": base + "/",
            "graph": base + "/",
            "graphAudience": base + "/",
            "activeDirectoryDataLake": base + "/",
            "batch": base + "/",
            "media": base + "/",
            "sqlManagement": base + "/",
            "microsoftGraphResourceId": base + "/",
            "vmImageAliasDoc": base + "/",
            "suffixes": {
                "acrLoginServer": _DOMAIN,
                "keyVaultDns": _DOMAIN,
                "sqlServerHostname": _DOMAIN,
                "storage": _DOMAIN,
            },
            # the 2015-01-01 shape's names
            "galleryEndpoint": base + "/",
            "graphEndpoint": base + "/",
            "portalEndpoint": base,
        }
        return answer(body)

    # ------------------------------------------------------------------ account

    def _subscription(self) -> dict[str, Any]:
        sub = self.fleet.subscription
        return {
            "id": f"/subscriptions/{sub}",
            "authorizationSource": "RoleBased",
            "managedByTenants": [],
            "subscriptionId": sub,
            "tenantId": TENANT,
            "displayName": "forewarn",
            "state": "Enabled",
            "subscriptionPolicies": {
                "locationPlacementId": "Public_2014-09-01",
                "quotaId": "PayAsYouGo_2014-09-01",
                "spendingLimit": "Off",
            },
        }

    async def subscriptions(self, call: Call) -> Response:
        return answer({"value": [self._subscription()]})

    async def subscription(self, call: Call) -> Response:
        return answer(self._subscription())

    async def tenants(self, call: Call) -> Response:
        return answer({"value": [{
            "id": f"/tenants/{TENANT}", "tenantId": TENANT, "tenantCategory": "Home",
            "countryCode": "US", "displayName": "forewarn", "domains": [_DOMAIN],
            "defaultDomain": _DOMAIN, "tenantType": "AAD",
        }]})  # fmt: skip

    # ------------------------------------------------------------------- groups

    def _group(self) -> dict[str, Any]:
        return {
            "id": self.fleet.group_id,
            "name": self.fleet.resource_group,
            "type": "Microsoft.Resources/resourceGroups",
            "location": self.fleet.location,
            "properties": {"provisioningState": "Succeeded"},
        }

    async def groups(self, call: Call) -> Response:
        return answer({"value": [self._group()]})

    async def group(self, call: Call) -> Response:
        return answer(self._group())

    async def group_exists(self, call: Call) -> Response:
        return answer(status=204)

    # ---------------------------------------------------------------- resources

    async def resources(self, call: Call) -> Response:
        """Every compute resource of the group, as ``$filter`` narrows them."""
        rows = [r for r in self._generic() if _matches(r, _conditions(call))]
        return answer(page(call.request, rows, lambda r: r))

    def _generic(self) -> list[dict[str, Any]]:
        """The group's resources as ``/resources`` lists them (id, name, type, place)."""
        out = []
        for vm in self.fleet.vms.values():
            if not self.fabric.is_deleted(vm.name):
                out.append(_generic(self.render.vm(vm.name)))
        for sset in self.fleet.scale_sets.values():
            if any(not self.fabric.is_deleted(n) for n in sset.instances.values()):
                out.append(_generic(self.render.scale_set(sset)))
        for scope in self.fleet.availability_sets.values():
            out.append(_generic(self.render.availability_set(scope.id)))
        return out


def _conditions(call: Call) -> list[tuple[str, str]]:
    """``$filter``'s clauses (``field eq 'value'`` joined by ``and``), or ARM's 400."""
    given = call.request.query_params.get("$filter", "")
    if not given.strip():
        return []
    out = []
    for clause in _AND.split(given.strip()):
        match = _CLAUSE.match(clause)
        field = match.group(1).lower() if match else ""
        if match is None or field not in (*_FIELDS, "tagname", "tagvalue"):
            raise ArmError(
                400,
                "InvalidFilterInQueryString",
                f"The $filter '{shown_name(given)}' is not supported here: compare "
                "resourceGroup, resourceType, name, location, tagName or tagValue with eq, "
                "joined by and.",
            )
        out.append((field, match.group(2)))
    return out


def _matches(resource: dict[str, Any], conditions: list[tuple[str, str]]) -> bool:
    tags: dict[str, str] = resource.get("tags") or {}
    names = [v for f, v in conditions if f == "tagname"]
    values = [v for f, v in conditions if f == "tagvalue"]
    for field, value in conditions:
        if field in _FIELDS and _FIELDS[field](resource) != value.lower():
            return False
    if names and not all(n in tags for n in names):
        return False
    return not values or all(tags.get(n) == v for n in names for v in values)


def _generic(resource: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "name", "type", "location", "tags", "sku", "zones")
    return {k: resource[k] for k in keys if k in resource}
