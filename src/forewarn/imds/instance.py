"""``/metadata/instance``: the compute subset real agents read (VM name, domains, zone)."""

from __future__ import annotations

import functools
from typing import Any

import msgspec

from forewarn.contract import (
    BAD_VERSION,
    MISSING_VERSION,
    NOT_FOUND,
    error_body,
    version_error_body,
)
from forewarn.fleet import VM, Scope, ScopeKind, Topology
from forewarn.fleet.azure import PROVIDER, AzureNames
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

#: Each compute field and the api-version that brought it (the documented schema; the
#: first fields date from the first version); a field newer than the request's version is
#: left out, as IMDS does.
_SINCE: dict[str, str] = {
    "azEnvironment": "2018-10-01", "additionalCapabilities": "2021-11-01",
    "customData": "2019-02-01", "evictionPolicy": "2020-12-01",
    "extendedLocation": "2021-03-01", "host": "2021-11-15", "hostGroup": "2021-11-15",
    "isHostCompatibilityLayerVm": "2020-06-01", "licenseType": "2020-09-01",
    "location": "2017-03-01", "name": "2017-03-01", "offer": "2017-03-01",
    "osProfile": "2020-07-15", "osType": "2017-03-01", "placementGroupId": "2017-08-01",
    "plan": "2018-04-02", "platformFaultDomain": "2017-03-01",
    "platformSubFaultDomain": "2021-10-01", "platformUpdateDomain": "2017-03-01",
    "priority": "2020-12-01", "provider": "2018-10-01", "publicKeys": "2018-04-02",
    "publisher": "2017-03-01", "resourceGroupName": "2017-08-01",
    "resourceId": "2019-03-11", "securityProfile": "2020-06-01", "sku": "2017-03-01",
    "storageProfile": "2019-06-01", "subscriptionId": "2017-08-01", "tags": "2017-08-01",
    "tagsList": "2019-06-04", "userData": "2021-01-01", "version": "2017-03-01",
    "virtualMachineScaleSet": "2021-03-01", "vmId": "2017-03-01",
    "vmScaleSetName": "2017-12-01", "vmSize": "2017-03-01", "zone": "2017-12-01",
}  # fmt: skip


def instance_document(
    vm: VM, version: str = INSTANCE_VERSIONS[-1], names: AzureNames | None = None
) -> dict[str, Any]:
    """The instance metadata of ``vm`` at api-version ``version`` (strings throughout, as
    IMDS sends them), named as ``names`` (the fleet's: ARM serves the same ids)."""
    identity = (names or _alone(vm)).identity(vm)
    scale_set_id = ""
    if vm.scale_set:
        scale_set_id = (
            f"/subscriptions/{identity.subscription}/resourceGroups/"
            f"{identity.resource_group}/providers/{PROVIDER}/virtualMachineScaleSets/"
            f"{vm.scale_set}"
        )
    compute: dict[str, Any] = {
        "additionalCapabilities": {"hibernationEnabled": "false"},
        "azEnvironment": "AzurePublicCloud",
        "customData": "",
        "evictionPolicy": "Deallocate" if vm.spot else "",
        "extendedLocation": {"name": "", "type": ""},
        "host": {"id": ""},
        "hostGroup": {"id": ""},
        "isHostCompatibilityLayerVm": "false",
        "licenseType": "",
        "location": vm.location,
        "name": vm.name,
        "offer": "0001-com-ubuntu-server-jammy",
        "osProfile": {
            "adminUsername": "azureuser",
            "computerName": identity.computer_name,
            "disablePasswordAuthentication": "true",
        },
        "osType": "Linux",
        "placementGroupId": vm.scope_id if vm.scale_set else "",
        "plan": {"name": "", "product": "", "publisher": ""},
        "platformFaultDomain": str(vm.fault_domain),
        "platformSubFaultDomain": "",
        "platformUpdateDomain": str(vm.update_domain),
        "priority": "Spot" if vm.spot else "Regular",
        "provider": PROVIDER,
        "publicKeys": [],
        "publisher": "canonical",
        "resourceGroupName": identity.resource_group,
        "resourceId": identity.resource_id,
        "securityProfile": {"secureBootEnabled": "false", "virtualTpmEnabled": "false"},
        "sku": "22_04-lts-gen2",
        "storageProfile": {"dataDisks": [], "imageReference": {}, "osDisk": {}},
        "subscriptionId": identity.subscription,
        "tags": ";".join(f"{k}:{v}" for k, v in identity.tags),
        "tagsList": [{"name": k, "value": v} for k, v in identity.tags],
        "userData": "",
        "version": "latest",
        "virtualMachineScaleSet": {"id": scale_set_id},
        "vmId": vm.vm_id,
        "vmScaleSetName": vm.scale_set,
        "vmSize": vm.size,
        "zone": vm.zone,
    }
    compute = {k: v for k, v in compute.items() if _SINCE[k] <= version}
    return {
        "compute": compute,
        "network": {
            "interface": [
                {
                    "ipv4": {
                        "ipAddress": [{"privateIpAddress": vm.address, "publicIpAddress": ""}],
                        "subnet": [{"address": "127.0.0.0", "prefix": "8"}],
                    },
                    "ipv6": {"ipAddress": []},
                    "macAddress": "000D3A000000",
                }
            ]
        },
    }


@functools.lru_cache(maxsize=64)
def _alone(vm: VM) -> AzureNames:
    """Names for a VM outside any fleet (a replay's): the default subscription and group
    (built once per VM, not per request)."""
    scope = Scope(vm.scope_id, ScopeKind.STANDALONE, (vm.name,))
    return Topology([scope], [vm], vm.name).azure


_NEWEST = INSTANCE_VERSIONS[:-4:-1]
_MISSING_VERSION = Reply(400, version_error_body(MISSING_VERSION, _NEWEST))
_BAD_VERSION = Reply(400, version_error_body(BAD_VERSION, _NEWEST))
_NOT_FOUND = Reply(404, error_body(NOT_FOUND))
_NOT_A_LEAF = Reply(400, error_body("Bad request. Format text is only for leaf nodes"))


def instance_reply(
    path: str, vm: VM, query: dict[str, str], names: AzureNames | None = None
) -> Reply:
    """The answer to a GET of ``path`` (lower-case, under ``/metadata/instance``) for
    ``vm``: a node of its document by path (keys ignoring case, list items by index), as
    JSON or, with ``format=text``, a leaf as text (a dict or a list is a 400, as in Azure).
    The endpoint and ``forewarn replay`` both answer with it."""
    version_name = query.get("api-version")
    if not version_name:
        return _MISSING_VERSION
    if version_name not in INSTANCE_VERSIONS:
        return _BAD_VERSION
    node: Any = instance_document(vm, version_name, names)
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
