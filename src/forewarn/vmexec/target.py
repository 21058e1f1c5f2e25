"""Which VM COMMAND is, and how its requests reach the endpoint as that VM.

The control API says it all, asked once before COMMAND runs for that one VM
(``GET /api/v1/vms/{name}``: the same cost in a fleet of ten or a million; the endpoint is
not asked: a fault injected there must hit COMMAND, not its start): where the VM is (its loopback
address, its dedicated port, its scope's kind) and what its OS calls itself (the name
``/metadata/instance`` reports, from the same fleet naming: instance 18 of a scale set
``aks-default-36328368-vmss`` is ``aks-default-36328368-vmss00000i``).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from forewarn.controlapi import ControlRefused
from forewarn.vmexec.errors import EndpointUnusable, VmNotFound

if TYPE_CHECKING:
    from forewarn.controlapi import ControlClient

__all__ = ["VmTarget", "find_vm", "parse_endpoint"]


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


def _vm_row(control: ControlClient, name: str) -> dict[str, Any]:
    """The VM named ``name`` (ignoring case, as the fleet does), with its scope's kind:
    one VM asked for (``GET /api/v1/vms/{name}``), never the fleet's whole topology."""
    try:
        return control.vm(name)
    except ControlRefused as exc:
        if exc.status != 404:
            raise
        raise VmNotFound(f"the fleet at {control.base}: {exc.error}") from None


def find_vm(control: ControlClient, name: str, endpoint_url: str) -> VmTarget:
    """VM ``name`` of the fleet the control API serves, reached at ``endpoint_url``."""
    vm = _vm_row(control, name)
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
    return VmTarget(
        name=vm["name"],
        computer_name=str(vm.get("computer_name") or vm["name"]),
        non_vnet=vm.get("scope_kind") == "cloud_service",
        upstream=upstream,
        source=source,
    )
