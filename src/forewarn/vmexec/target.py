"""Which VM COMMAND is, and how its requests reach the endpoint as that VM.

The control API says where the VM is (its loopback address, its dedicated port, its
scope's kind); the endpoint itself, asked as that VM, says what the VM is called by its
OS (``/metadata/instance``'s ``osProfile.computerName``: the name a scale set's instance
gets, ``aks-default-36328368-vmss00000i`` for instance 18), and proves that it answers
as that VM and not another.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from forewarn.vmexec.errors import EndpointUnusable, VmNotFound

if TYPE_CHECKING:
    from forewarn.controlapi import ControlClient

__all__ = ["INSTANCE_PATH", "VmTarget", "find_vm", "parse_endpoint"]

#: What the sandbox asks the endpoint once, as the VM, before COMMAND runs.
INSTANCE_PATH = "/metadata/instance/compute?api-version=2021-02-01"
#: How long the endpoint may answer 429/5xx or fail (an injected fault) before giving up.
_PATIENCE = 10.0


@dataclass(frozen=True, slots=True)
class VmTarget:
    """One VM of the fleet, as forewarn relays to the endpoint for it."""

    name: str
    computer_name: str
    #: A cloud service's role instance: no virtual network (DHCP option 245 finds it).
    non_vnet: bool
    #: Where the endpoint answers this VM, and the source address that says who asks.
    upstream: tuple[str, int]
    source: str | None


def parse_endpoint(url: str, origin: str = "--endpoint") -> tuple[str, int]:
    """``http://HOST:PORT`` as (host, port), or EndpointUnusable naming what is wrong."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme != "http" or not parts.hostname:
        raise EndpointUnusable(f"{origin} {url!r} is not an http://HOST:PORT metadata endpoint")
    try:
        port = parts.port or 80
    except ValueError:
        raise EndpointUnusable(f"{origin} {url!r} has no valid port") from None
    return parts.hostname, port


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _vm_row(control: ControlClient, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The VM named ``name`` (ignoring case, as the fleet does) and its scope."""
    scopes = control.topology()["scopes"]
    for exact in (True, False):
        for scope in scopes:
            for vm in scope["vms"]:
                if vm["name"] == name or (not exact and vm["name"].lower() == name.lower()):
                    return vm, scope
    names = [vm["name"] for scope in scopes for vm in scope["vms"]]
    shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    raise VmNotFound(f"the fleet at {control.base} has no VM named {name!r} (its VMs: {shown})")


def _ask_instance(upstream: tuple[str, int], source: str | None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection(
        *upstream, timeout=_PATIENCE, source_address=None if source is None else (source, 0)
    )
    try:
        connection.request("GET", INSTANCE_PATH, headers={"Metadata": "true"})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _compute(vm: str, url: str, upstream: tuple[str, int], source: str | None) -> dict[str, Any]:
    """The endpoint's instance metadata for ``vm``, asked as ``vm``."""
    deadline = time.monotonic() + _PATIENCE
    while True:
        try:
            status, body = _ask_instance(upstream, source)
        except OSError as exc:
            if isinstance(exc, ConnectionRefusedError) or time.monotonic() > deadline:
                raise EndpointUnusable(
                    f"cannot reach the metadata endpoint at {url} as VM {vm!r} ({exc}); "
                    "is `forewarn serve` running? (--endpoint, $FOREWARN_IMDS_URL)"
                ) from None
        else:
            if status == 200:
                try:
                    compute: dict[str, Any] = json.loads(body)
                    return compute
                except ValueError:
                    raise EndpointUnusable(f"{url} is not a metadata endpoint") from None
            if status not in (429, 500, 502, 503, 504) or time.monotonic() > deadline:
                raise EndpointUnusable(
                    f"the metadata endpoint at {url} answered VM {vm!r}'s instance metadata "
                    f"with HTTP {status}: {body[:200].decode('utf-8', 'replace')}"
                )
        time.sleep(0.5)


def find_vm(control: ControlClient, name: str, endpoint_url: str) -> VmTarget:
    """VM ``name`` of the fleet the control API serves, reached at ``endpoint_url``."""
    vm, scope = _vm_row(control, name)
    host, port = parse_endpoint(endpoint_url)
    if vm.get("port") is not None:
        upstream, source = (host, int(vm["port"])), None  # its own port says who it is
    elif _is_loopback(host):
        upstream, source = (host, port), str(vm["address"])
        if ":" in host:  # an IPv6 loopback endpoint: 127.x source addresses cannot reach it
            raise EndpointUnusable(
                f"VM {vm['name']!r} is known by its IPv4 loopback address {source}: "
                f"use an IPv4 --endpoint (http://127.0.0.1:{port})"
            )
    else:
        raise EndpointUnusable(
            f"VM {vm['name']!r} is known by its loopback address {vm['address']}, which "
            f"cannot reach {endpoint_url}: run forewarn exec on the server's machine, or give "
            "the fleet's VMs their own ports (port_base)"
        )
    compute = _compute(vm["name"], endpoint_url, upstream, source)
    if compute.get("name") != vm["name"]:
        raise EndpointUnusable(
            f"the metadata endpoint at {endpoint_url} answers as VM {compute.get('name')!r}, "
            f"not {vm['name']!r}: is it the endpoint of the server at {control.base}?"
        )
    return VmTarget(
        name=vm["name"],
        computer_name=str(compute.get("osProfile", {}).get("computerName") or vm["name"]),
        non_vnet=scope.get("kind") == "cloud_service",
        upstream=upstream,
        source=source,
    )
