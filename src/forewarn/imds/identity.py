"""Which VM is asking: by dedicated port, by source address, else the default VM."""

from __future__ import annotations

from ..fabric import VM, Topology

__all__ = ["VmResolver"]


class VmResolver:
    """Maps a connection (client address, local port) to the VM it speaks for.

    Every VM has its own address (127.1.x.y by default), so ``curl --interface`` picks a
    VM; a VM with a dedicated port is that port's VM whatever the source; anything else
    is the default VM (plain ``127.0.0.1`` requests), or nobody when there is none.
    """

    __slots__ = ("_default", "_has_ports", "_topology")

    def __init__(self, topology: Topology) -> None:
        self._topology = topology
        self._has_ports = bool(topology.ports())
        self._default = topology.vms.get(topology.default_vm) if topology.default_vm else None

    def resolve(self, client_address: str | None, local_port: int | None) -> VM | None:
        """The VM behind a request, or None."""
        if local_port is not None and self._has_ports:
            vm = self._topology.vm_by_port(local_port)
            if vm is not None:
                return vm
        if client_address is not None:
            if client_address.startswith("::ffff:"):
                client_address = client_address[7:]
            vm = self._topology.vm_by_address(client_address)
            if vm is not None:
                return vm
        return self._default
