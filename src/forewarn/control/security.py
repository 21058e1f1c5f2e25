"""Who may drive the control API: its own addresses, its own origin, the token holder.

With no token (the loopback default), any web page the user opens could otherwise reach
the API: a cross-site form or ``fetch`` (refused here by the ``Origin`` check, and by the
app's JSON-only rule for state-changing requests), or DNS rebinding, where a hostile name
resolves to 127.0.0.1 and the page then reads the answers (refused by the ``Host`` check).
"""

from __future__ import annotations

import hmac
import ipaddress
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import msgspec
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["AccessGuard", "Authority", "HostPolicy", "parse_authority", "parse_control_host"]

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*\.?")
_AUTHORITY = re.compile(
    r"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>[^\[\]:/@\s]+))(?::(?P<port>\d{1,5}))?"
)
_ORIGIN = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*)://(?P<authority>[^/?#]*)")


@dataclass(frozen=True)
class Authority:
    """``host[:port]``: a lower-case name or an IP literal (IPv6 without brackets)."""

    host: str
    port: int | None

    def same_host(self, other: str) -> bool:
        """Names compare case-insensitively; IP literals as addresses (``::ffff:a.b.c.d``)."""
        mine, theirs = _address(self.host), _address(other)
        if mine is not None and theirs is not None:
            return mine == theirs
        return self.host == other.lower().rstrip(".")


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _is_loopback(host: str) -> bool:
    if host.rstrip(".").lower() == "localhost":
        return True
    address = _address(host)
    return address is not None and address.is_loopback


def parse_authority(text: str) -> Authority | None:
    """A ``Host`` value (``name``, ``name:port``, ``[v6]:port``), or None when malformed."""
    match = _AUTHORITY.fullmatch(text.strip().lower())
    if match is None:
        return None
    port = int(match["port"]) if match["port"] is not None else None
    if port is not None and port > 65535:
        return None
    if match["v6"] is not None:
        address = _address(match["v6"])
        if address is None or ":" not in match["v6"]:
            return None
        return Authority(match["v6"], port)
    name = match["name"].rstrip(".")
    if not name or (_address(name) is None and _NAME.fullmatch(name) is None):
        return None
    return Authority(name, port)


def parse_control_host(text: str) -> Authority:
    """A ``--control-host`` value: a name or IP literal, optionally with ``:port``."""
    candidate = text.strip()
    if candidate.count(":") > 1 and not candidate.startswith("["):
        candidate = f"[{candidate}]"  # a bare IPv6 literal
    authority = parse_authority(candidate)
    if authority is None or not authority.host:
        raise ValueError(
            f"--control-host {text!r} must be a host name or IP address, optionally with :PORT"
        )
    return authority


class HostPolicy:
    """The names the API answers to: its listener's own, and the configured ones.

    On loopback, every loopback literal and ``localhost`` (any port: SSH tunnels and port
    forwards keep the name and change the port) counts as the listener's own.
    """

    def __init__(self, names: Iterable[str] = ()) -> None:
        self.names = tuple(parse_control_host(name) for name in names)

    def _configured(self, given: Authority, default_port: int) -> bool:
        port = given.port if given.port is not None else default_port
        return any(given.same_host(name.host) and name.port in (None, port) for name in self.names)

    def host_allowed(self, given: Authority, server: tuple[str, int] | None, scheme: str) -> bool:
        """May a request whose ``Host`` is ``given`` reach the listener at ``server``?"""
        default_port = _DEFAULT_PORTS.get(scheme, 80)
        if self._configured(given, default_port):
            return True
        if (server is None or _is_loopback(server[0])) and _is_loopback(given.host):
            return True
        if server is None:
            return False
        port = given.port if given.port is not None else default_port
        return given.same_host(server[0]) and port == server[1]

    def origin_allowed(self, origin: str, target: Authority | None, scheme: str) -> bool:
        """Is ``origin`` the API's own (the request's ``target``) or a configured name?"""
        match = _ORIGIN.fullmatch(origin.strip().lower())
        if match is None:
            return False
        given = parse_authority(match["authority"])
        origin_default = _DEFAULT_PORTS.get(match["scheme"])
        if given is None or origin_default is None:
            return False
        if self._configured(given, origin_default):
            return True
        if target is None:
            return False
        origin_port = given.port if given.port is not None else origin_default
        target_port = target.port if target.port is not None else _DEFAULT_PORTS.get(scheme, 80)
        return given.same_host(target.host) and origin_port == target_port


def _headers(scope: Scope, name: bytes) -> list[str]:
    return [value.decode("latin-1") for key, value in scope["headers"] if key.lower() == name]


def _bearer_matches(header: str, expected: bytes) -> bool:
    """``Bearer <token>``, the scheme in any case (RFC 9110 §11.1)."""
    scheme, _, credentials = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(credentials.strip(" ").encode(), expected)


class AccessGuard:
    """ASGI middleware: ``Host`` (421), ``Origin`` (403), then the token (401), in that order.

    ``/healthz`` needs no token (probes carry none), nor do requests ``public`` says are
    (the dashboard's page and files: a browser's navigation carries no token); they are
    checked for Host and Origin like everything else.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        hosts: HostPolicy,
        token: str | None,
        public: Callable[[Scope], bool] = lambda scope: False,
    ) -> None:
        self.app = app
        self.hosts = hosts
        self._token = token.encode() if token else None
        self._public = public

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, message, extra = refusal
        body = msgspec.json.encode({"error": message})
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            *extra,
        ]
        start: Message = {"type": "http.response.start", "status": status, "headers": headers}
        await send(start)
        await send(
            {"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body}
        )

    def _refusal(self, scope: Scope) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        scheme = str(scope.get("scheme", "http"))
        server = scope.get("server")
        server_address = (str(server[0]), int(server[1])) if server else None
        hosts = _headers(scope, b"host")
        if len(hosts) > 1:
            return 421, "more than one Host header", []
        target: Authority | None = None
        if hosts:
            target = parse_authority(hosts[0])
            if target is None or not self.hosts.host_allowed(target, server_address, scheme):
                return (
                    421,
                    (
                        f"Host {hosts[0]!r} is not an address of this control API; it answers to "
                        "the address it listens on (any loopback address or localhost when that "
                        "is loopback) and to names given with --control-host"
                    ),
                    [],
                )
        elif server_address is not None:
            target = Authority(server_address[0], server_address[1])
        origins = _headers(scope, b"origin")
        if len(origins) > 1:
            return 403, "more than one Origin header", []
        if origins and not self.hosts.origin_allowed(origins[0], target, scheme):
            return (
                403,
                (
                    f"cross-origin request refused (Origin {origins[0]!r}): the control API "
                    "serves only pages of its own origin and of names given with --control-host"
                ),
                [],
            )
        if self._token is not None and scope["path"] != "/healthz" and not self._public(scope):
            given = _headers(scope, b"authorization")
            if len(given) != 1 or not _bearer_matches(given[0], self._token):
                message = "missing or wrong Authorization: Bearer token"
                return 401, message, [(b"www-authenticate", b"Bearer")]
        return None
