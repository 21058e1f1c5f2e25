"""The sockets a server serves, bound before anything is created or announced, and the
banner ``forewarn serve`` prints about them."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from forewarn.fleet import Topology
from forewarn.server.config import ServeConfig, parse_bind

if TYPE_CHECKING:
    from forewarn.server.runtime import Runtime
    from forewarn.server.start_times import StartTimes

__all__ = ["Listeners", "address", "banner", "bind_listeners", "open_listeners"]


def _listen(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A bound socket; ``reuse_port``: shared with the other workers (the kernel spreads
    connections over them)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio's own loop sets TCP_NODELAY on accepted connections only
    # then (uvloop always does); without it Nagle holds a reply's second write ~40 ms.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.set_inheritable(True)
    return sock


@dataclass
class Listeners:
    """The sockets a server serves, opened before anything is announced."""

    imds: list[socket.socket]
    vm_ports: dict[int, str]
    control: socket.socket
    #: A worker's own control listener (the others share ``control``): the address the
    #: leader is reached at, for forwarding.
    private_control: socket.socket | None = None

    def close(self) -> None:
        for sock in [*self.imds, self.control]:
            sock.close()
        if self.private_control is not None:
            self.private_control.close()

    def control_sockets(self) -> list[socket.socket]:
        """Every socket the control API serves."""
        extra = [] if self.private_control is None else [self.private_control]
        return [self.control, *extra]

    def control_url(self) -> str:
        """The URL at which this very process answers the control API."""
        return f"http://{address(self.private_control or self.control)}"


def open_listeners(runtime: Runtime) -> Listeners:
    """Bind every socket (endpoint, per-VM ports, control); fail before serving if taken."""
    return bind_listeners(runtime.config, runtime.topology)


def bind_listeners(config: ServeConfig, topology: Topology) -> Listeners:
    """``open_listeners`` before any runtime exists (``forewarn serve`` binds first)."""
    imds: list[socket.socket] = []
    vm_ports: dict[int, str] = {}
    shared = config.workers > 1
    private = None
    try:
        for bind in config.imds_bind:
            imds.append(_listen(*parse_bind(bind), reuse_port=shared))
        if config.per_vm_ports and topology.vms.has_ports:
            host = parse_bind(config.imds_bind[0])[0]
            taken = {parse_bind(b)[1] for b in (*config.imds_bind, config.control_bind)}
            for vm in topology.vms.values():
                if vm.port in taken:
                    raise OSError(f"VM {vm.name!r} wants port {vm.port}, which a listener uses")
                if vm.port is not None:
                    imds.append(_listen(host, vm.port, reuse_port=shared))
                    vm_ports[vm.port] = vm.name
        control_host, control_port = parse_bind(config.control_bind)
        if shared:
            private = _listen(control_host, 0)
        control = _listen(control_host, control_port, reuse_port=shared)
    except OSError:
        for sock in [*imds, *([private] if private is not None else [])]:
            sock.close()
        raise
    return Listeners(imds, vm_ports, control, private)


def address(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def banner(
    runtime: Runtime, listeners: Listeners, ready: StartTimes | None = None
) -> Iterator[str]:
    """What ``forewarn serve`` prints on start: listeners, the fleet, how long it took to
    be ready (``ready``), the default VM, a curl line."""
    endpoint = address(listeners.imds[0])
    yield f"forewarn: metadata endpoint on http://{endpoint}"
    for sock in listeners.imds[1:]:
        port = sock.getsockname()[1]
        name = listeners.vm_ports.get(port)
        yield f"forewarn:   also http://{address(sock)}" + (f" (VM {name})" if name else "")
    yield f"forewarn: control API on http://{address(listeners.control)} (OpenAPI: /openapi.json)"
    fleet = runtime.topology
    vms = f"{len(fleet.vms)} VM" + ("" if len(fleet.vms) == 1 else "s")
    scopes = f"{len(fleet.scopes)} scope" + ("" if len(fleet.scopes) == 1 else "s")
    where = runtime.config.where
    yield (
        f"forewarn: {vms} in {scopes}; clock "
        f"{runtime.config.clock}, time scale {runtime.config.time_scale or 1:g}; "
        + (f"store {where} (shared: `forewarn status` shows who leads)"
           if runtime.cluster is not None else f"db {where}")
    )  # fmt: skip
    if ready is not None:
        yield f"forewarn: {ready}"
    default = fleet.default_vm
    if default:
        vm = fleet.vms[default]
        yield f"forewarn: a plain request from 127.0.0.1 is VM {default!r} (scope {vm.scope_id})"
    other = next((v for v in fleet.vms.values() if v.name != default), None)
    yield (
        "forewarn: try  curl -s -H Metadata:true "
        f"'http://{endpoint}/metadata/scheduledevents?api-version=2020-07-01'"
    )
    if other is not None:
        yield (
            f"forewarn: as VM {other.name!r}:  curl -s --interface {other.address} "
            f"-H Metadata:true 'http://{endpoint}/metadata/scheduledevents?api-version=2020-07-01'"
        )
