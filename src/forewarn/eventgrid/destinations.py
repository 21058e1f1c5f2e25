"""Where Event Grid may send requests. A webhook destination is loopback unless the
operator allows more (``forewarn serve --eventgrid-allow HOST_OR_CIDR``): whoever reaches
ARM or the control API cannot make forewarn send requests elsewhere, nor tell from the
refusal which ports are open (a refused destination is never connected to).

A host name is resolved and every address it gives must be allowed (a name the operator
allowed by name is trusted whatever it resolves to); the request then goes to the
address checked, so a second DNS answer cannot send it elsewhere (``GuardedTransport``:
the Host header and the TLS name stay the URL's)."""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Iterable

import httpx

__all__ = ["DestinationRefused", "Destinations", "GuardedTransport", "parse_allowed"]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_LOOPBACK: tuple[Network, ...] = (
    ipaddress.ip_network("127.0.0.0/8"),
    ipaddress.ip_network("::1/128"),
)
_HOST = re.compile(r"^(?=.{1,253}$)([A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\.?)+$")
HINT = "forewarn serve --eventgrid-allow HOST_OR_CIDR"


class DestinationRefused(httpx.TransportError):
    """A webhook destination outside what the operator allows: nothing was sent to it."""


def parse_allowed(entry: str) -> Network | str:
    """An ``--eventgrid-allow`` entry: an address or network (CIDR), or a host name
    (lower-cased); ``ValueError`` naming it otherwise."""
    text = entry.strip()
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        pass
    if not _HOST.match(text) or text.replace(".", "").isdigit():
        raise ValueError(
            f"--eventgrid-allow {entry[:80]!r} is neither an address, a network "
            "(10.0.0.0/8, fd00::/8) nor a host name"
        )
    return text.rstrip(".").lower()


def _address(text: str) -> Address | None:
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


class Destinations:
    """Loopback, and the networks and host names the operator allowed."""

    def __init__(self, allowed: Iterable[str] = ()) -> None:
        entries = [parse_allowed(entry) for entry in allowed]
        self.networks: tuple[Network, ...] = _LOOPBACK + tuple(
            e for e in entries if not isinstance(e, str)
        )
        self.names = frozenset(e for e in entries if isinstance(e, str))

    def allows(self, address: Address) -> bool:
        return any(address in network for network in self.networks)

    async def resolve(self, host: str, port: int) -> str | None:
        """The address to connect to for ``host``: None for a host allowed by name
        (connected as it resolves), else one of its addresses, every one of which is
        allowed; ``DestinationRefused`` otherwise (no connection is attempted)."""
        name = host.rstrip(".").lower()
        if name in self.names:
            return None
        literal = _address(name.strip("[]"))
        if literal is not None:
            if not self.allows(literal):
                raise self._refused(host, str(literal))
            return str(literal)
        loop = asyncio.get_running_loop()
        try:
            found = await loop.getaddrinfo(name, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise DestinationRefused(
                f"Webhook destination {host[:100]!r} refused: the name does not resolve; "
                "nothing was sent to it."
            ) from None
        addresses = [str(sockaddr[0]) for *_, sockaddr in found]
        for text in addresses:
            address = _address(text)
            if address is None or not self.allows(address):
                raise self._refused(host, text)
        if not addresses:  # pragma: no cover - getaddrinfo raises instead
            raise DestinationRefused(f"Webhook destination {host[:100]!r} has no address.")
        return addresses[0]

    async def check_url(self, url: str) -> None:
        """``DestinationRefused`` when ``url``'s host is not allowed."""
        parsed = httpx.URL(url)
        await self.resolve(parsed.host, parsed.port or (443 if parsed.scheme == "https" else 80))

    def _refused(self, host: str, address: str) -> DestinationRefused:
        via = "" if address == host.strip("[]") else f" (it resolves to {address})"
        return DestinationRefused(
            f"Webhook destination {host[:100]!r}{via} refused: forewarn delivers to "
            f"loopback only, and to the hosts and networks allowed with `{HINT}`; "
            "nothing was sent to it."
        )


class GuardedTransport(httpx.AsyncBaseTransport):
    """Sends a request only to a destination ``Destinations`` allows, and to the very
    address it checked (the Host header and the TLS server name stay the URL's)."""

    def __init__(self, destinations: Destinations, inner: httpx.AsyncBaseTransport) -> None:
        self.destinations = destinations
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        port = url.port or (443 if url.scheme == "https" else 80)
        address = await self.destinations.resolve(url.host, port)
        if address is not None and address != url.host:
            request.url = url.copy_with(host=address)
            request.extensions = {**request.extensions, "sni_hostname": url.host}
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()
