"""``/metadata/instance``: the compute subset real agents read (VM name, domains, zone)."""

from __future__ import annotations

from typing import Any

import msgspec

from forewarn.contract import (
    BAD_VERSION,
    MISSING_VERSION,
    NOT_FOUND,
    error_body,
    version_error_body,
)
from forewarn.fleet import VM
from forewarn.imds.messages import TEXT, Reply

__all__ = ["INSTANCE", "INSTANCE_VERSIONS", "instance_document", "instance_reply"]

INSTANCE = "/metadata/instance"

INSTANCE_VERSIONS: tuple[str, ...] = (
    "2017-03-01", "2017-04-02", "2017-08-01", "2017-10-01", "2017-12-01", "2018-02-01",
    "2018-04-02", "2018-10-01", "2019-02-01", "2019-03-11", "2019-04-30", "2019-06-01",
    "2019-06-04", "2019-08-01", "2019-08-15", "2019-11-01", "2020-06-01", "2020-07-15",
    "2020-09-01", "2020-10-01", "2020-12-01", "2021-01-01", "2021-02-01", "2021-03-01",
    "2021-05-01", "2021-10-01", "2021-11-01", "2021-11-15", "2021-12-13", "2023-07-01",
    "2023-11-15", "2024-03-15",
)  # fmt: skip

SUBSCRIPTION = "00000000-0000-4000-8000-00000000f0e1"
RESOURCE_GROUP = "forewarn"


def instance_document(vm: VM) -> dict[str, Any]:
    """The instance metadata of ``vm`` (strings throughout, as IMDS sends them)."""
    provider = "Microsoft.Compute"
    if vm.scale_set:
        resource_id = (
            f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{RESOURCE_GROUP}/providers/"
            f"{provider}/virtualMachineScaleSets/{vm.scale_set}/virtualMachines/"
            f"{vm.name.rsplit('_', 1)[-1]}"
        )
    else:
        resource_id = (
            f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{RESOURCE_GROUP}/providers/"
            f"{provider}/virtualMachines/{vm.name}"
        )
    return {
        "compute": {
            "azEnvironment": "AzurePublicCloud",
            "location": vm.location,
            "name": vm.name,
            "osType": "Linux",
            "platformFaultDomain": str(vm.fault_domain),
            "platformUpdateDomain": str(vm.update_domain),
            "priority": "Spot" if vm.spot else "Regular",
            "provider": provider,
            "resourceGroupName": RESOURCE_GROUP,
            "resourceId": resource_id,
            "subscriptionId": SUBSCRIPTION,
            "tags": "",
            "vmId": vm.vm_id,
            "vmScaleSetName": vm.scale_set,
            "vmSize": vm.size,
            "zone": vm.zone,
        },
        "network": {
            "interface": [
                {
                    "ipv4": {
                        "ipAddress": [{"privateIpAddress": vm.address, "publicIpAddress": ""}]
                    },
                    "macAddress": "000D3A000000",
                }
            ]
        },
    }


_NEWEST = INSTANCE_VERSIONS[:-4:-1]
_MISSING_VERSION = Reply(400, version_error_body(MISSING_VERSION, _NEWEST))
_BAD_VERSION = Reply(400, version_error_body(BAD_VERSION, _NEWEST))
_NOT_FOUND = Reply(404, error_body(NOT_FOUND))
_NOT_A_LEAF = Reply(400, error_body("Bad request. Format text is only for leaf nodes"))


def instance_reply(path: str, vm: VM, query: dict[str, str]) -> Reply:
    """The answer to a GET of ``path`` (lower-case, under ``/metadata/instance``) for
    ``vm``: a node of its document by path (keys ignoring case, list items by index), as
    JSON or, with ``format=text``, a leaf as text (a dict or a list is a 400, as in Azure).
    The endpoint and ``forewarn replay`` both answer with it."""
    version_name = query.get("api-version")
    if not version_name:
        return _MISSING_VERSION
    if version_name not in INSTANCE_VERSIONS:
        return _BAD_VERSION
    node: Any = instance_document(vm)
    for part in path[len(INSTANCE) :].strip("/").split("/"):
        if not part:
            continue
        if isinstance(node, dict):
            match = next((k for k in node if k.lower() == part), None)
            if match is None:
                return _NOT_FOUND
            node = node[match]
        elif isinstance(node, list) and part.isascii() and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _NOT_FOUND
    if query.get("format", "json").lower() == "text":
        if isinstance(node, dict | list):
            return _NOT_A_LEAF
        return Reply(200, str(node).encode(), content_type=TEXT)
    return Reply(200, msgspec.json.encode(node))
