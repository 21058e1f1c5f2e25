"""Which VM is asking: by dedicated port, by source address, else the default VM."""

from __future__ import annotations

from forewarn.fleet import VM, Topology

__all__ = ["VmResolver"]


class VmResolver:
    """Maps a connection (client address, local port) to the VM it speaks for.

    Every VM has its own address (127.1.x.y by default, then 127.2.x.y and on across
    127.0.0.0/8 for big fleets), so ``curl --interface`` picks a VM; a VM with a dedicated
    port is that port's VM whatever the source; anything else is the default VM (plain
    ``127.0.0.1`` requests), or nobody when there is none. One dict look-up per request
    whatever the fleet's size: the maps are the topology's own, built once.
    """

    __slots__ = ("_by_address", "_by_port", "_default")

    def __init__(self, topology: Topology) -> None:
        self._by_address = topology.address_map()
        self._by_port = topology.port_map()
        self._default = topology.vms.get(topology.default_vm) if topology.default_vm else None

    def resolve(self, client_address: str | None, local_port: int | None) -> VM | None:
        """The VM behind a request, or None."""
        if local_port is not None and self._by_port:
            vm = self._by_port.get(local_port)
            if vm is not None:
                return vm
        if client_address is not None:
            if client_address.startswith("::ffff:"):
                client_address = client_address[7:]
            vm = self._by_address.get(client_address)
            if vm is not None:
                return vm
        return self._default
