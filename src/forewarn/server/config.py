"""Settings of ``forewarn serve``, in one place.

Layers, lowest first: these defaults < a config file (``--config``, YAML) < environment
(``FOREWARN_<OPTION>``) < command-line flags. The CLI applies the layers; this module
holds the result and checks it.
"""

from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import asdict, dataclass
from typing import Any, Literal

from forewarn.contract.addresses import DEFAULT_CONTROL_BIND, DEFAULT_IMDS_BIND
from forewarn.contract.limits import RATE_LIMIT
from forewarn.control import parse_control_host
from forewarn.eventgrid.destinations import parse_allowed
from forewarn.server.cpu_slice import MAX_SLICE, MIN_SLICE

__all__ = ["ConfigError", "ServeConfig", "parse_bind"]


class ConfigError(ValueError):
    """An invalid setting; the message names it."""


def parse_bind(text: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` for IPv6) into its parts."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not (port_text.isascii() and port_text.isdigit()):
        raise ConfigError(f"bind address {text!r} must look like HOST:PORT")
    host = host.strip("[]")
    port = int(port_text)
    if not 0 <= port <= 65535:
        raise ConfigError(f"port {port} is out of range")
    return host, port


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServeConfig:
    """The effective configuration of a server."""

    fleet: str | None = None
    db: str = "forewarn.db"
    #: Start a new, empty ``db`` where its marker (``<db>.id``) says one was deleted.
    new_db: bool = False
    #: A PostgreSQL URL: the fleet's state is shared by every process serving it (instead
    #: of ``db``); one of them leads, the others follow.
    store: str | None = None
    #: Processes serving the fleet on this host (they share ``store``).
    workers: int = 1
    #: None: what the database remembers, else "real" and 1 (``build_runtime`` decides).
    clock: Literal["real", "virtual"] | None = None
    time_scale: float | None = None
    imds_bind: tuple[str, ...] = (DEFAULT_IMDS_BIND,)
    control_bind: str = DEFAULT_CONTROL_BIND
    control_token: str | None = None
    #: Extra names (``--control-host``) the control API answers to besides its own address.
    control_hosts: tuple[str, ...] = ()
    per_vm_ports: bool = True
    rate_limit: float = RATE_LIMIT
    first_call_delay: float = 0.0
    #: The metadata listener's defences: seconds for a request head, then for its body, and
    #: connections per client address (also never more than a quarter of the open files).
    imds_header_timeout: float = 10.0
    imds_body_timeout: float = 30.0
    imds_max_connections_per_address: int = 256
    #: The same defences on the API listeners (control API and ARM): seconds for a TLS
    #: handshake and a request head, and connections per client address (never more than
    #: half of their share of the open files: ``admission/``).
    api_header_timeout: float = 10.0
    api_max_connections_per_address: int = 1024
    #: The event loop thread's CPU slice in ms (``cpu_slice.py``); 0: the kernel's default.
    loop_slice: float = 0.1
    enablement: Literal["on-first-request", "always"] = "on-first-request"
    #: Append every document served to each VM, when it changes, to this JSON-lines file.
    record: str | None = None
    log_format: Literal["console", "json"] = "console"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    #: The ARM listener (HTTPS; off unless given), its Bearer token (None: any token) and
    #: where its local CA lives (None: ``forewarn-ca`` beside the database).
    arm_bind: str | None = None
    arm_token: str | None = None
    #: The client secret ARM's identity routes require before they sign a token (None:
    #: ``arm_token`` itself when one is set; any secret otherwise).
    arm_client_secret: str | None = None
    arm_ca_dir: str | None = None
    #: Where Event Grid may deliver besides loopback: addresses, networks (CIDR) and host
    #: names (``--eventgrid-allow``, repeatable; ``forewarn.eventgrid.destinations``).
    eventgrid_allow: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        scale = self.time_scale
        if scale is not None and not (math.isfinite(scale) and scale > 0):
            raise ConfigError("--time-scale must be a positive number")
        if not (math.isfinite(self.rate_limit) and self.rate_limit >= 0):
            raise ConfigError("--rate-limit must be >= 0 (0 turns it off)")
        if not (math.isfinite(self.first_call_delay) and self.first_call_delay >= 0):
            raise ConfigError("--first-call-delay must be >= 0")
        deadlines = {
            "--imds-header-timeout": self.imds_header_timeout,
            "--imds-body-timeout": self.imds_body_timeout,
            "--api-header-timeout": self.api_header_timeout,
        }
        for flag, seconds in deadlines.items():
            if not (math.isfinite(seconds) and seconds > 0):
                raise ConfigError(f"{flag} must be a positive number of seconds")
        if self.imds_max_connections_per_address < 1:
            raise ConfigError("--imds-max-connections-per-address must be >= 1")
        if self.api_max_connections_per_address < 1:
            raise ConfigError("--api-max-connections-per-address must be >= 1")
        low, high = MIN_SLICE * 1000, MAX_SLICE * 1000
        if not (self.loop_slice == 0 or low <= self.loop_slice <= high):
            raise ConfigError(f"--loop-slice must be 0 (the kernel's) or {low:g}-{high:g} ms")
        arm_binds = () if self.arm_bind is None else (self.arm_bind,)
        binds = [parse_bind(b) for b in (*self.imds_bind, self.control_bind, *arm_binds)]
        ports = [port for _, port in binds if port != 0]
        twice = sorted({port for port in ports if ports.count(port) > 1})
        if twice:
            raise ConfigError(f"port {twice[0]} is given to two listeners")
        if self.store is not None and not self.store.startswith(("postgresql://", "postgres://")):
            raise ConfigError(
                f"--store must be a PostgreSQL URL (postgresql://USER@HOST:PORT/DB), "
                f"not {self.store.split('://')[0] if '://' in self.store else self.store!r}; "
                "an SQLite file is given with --db"
            )
        if self.workers < 1 or self.workers > 64:
            raise ConfigError("--workers must be 1 to 64")
        if self.new_db and self.store is not None:
            raise ConfigError("--new-db is for an SQLite --db, not --store")
        if self.workers > 1 and self.store is None:
            raise ConfigError("--workers needs --store postgresql://...: workers share its state")
        if self.workers > 1 and self.record is not None:
            raise ConfigError("--record needs --workers 1: one process writes the file")
        if self.workers > 1 and 0 in [port for _, port in binds]:
            raise ConfigError("--workers needs fixed ports: every worker listens on the same ones")
        host, _ = parse_bind(self.control_bind)
        if not _is_loopback(host) and not self.control_token:
            raise ConfigError(
                f"the control API would listen on {host}, off loopback: set --control-token"
            )
        arm_open = self.arm_bind is not None and not _is_loopback(parse_bind(self.arm_bind)[0])
        if arm_open and not self.arm_token:
            raise ConfigError("the ARM listener would listen off loopback: set --arm-token")
        for name in self.control_hosts:
            try:
                parse_control_host(name)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        for entry in self.eventgrid_allow:
            try:
                parse_allowed(entry)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None

    def as_dict(self) -> dict[str, Any]:
        """Plain data, for ``--print-config``."""
        out = asdict(self)
        out["imds_bind"] = list(self.imds_bind)
        out["control_hosts"] = list(self.control_hosts)
        out["eventgrid_allow"] = list(self.eventgrid_allow)
        if out["control_token"]:
            out["control_token"] = "***"
        if out["arm_token"]:
            out["arm_token"] = "***"
        if out["arm_client_secret"]:
            out["arm_client_secret"] = "***"
        if self.store is not None:
            out["store"] = _without_password(self.store)
        return out

    @property
    def where(self) -> str:
        """Where the state lives, for messages: the database file or the store's URL."""
        return _without_password(self.store) if self.store is not None else self.db


def _without_password(url: str) -> str:
    return re.sub(r"^(\w+://[^:/@]*):[^@/]*@", r"\1:***@", url)
