"""One VM of the fleet: a record of its own, so the fleet's table (``vmtable``) and its
topology both name it without importing each other."""

from __future__ import annotations

import uuid

import msgspec

__all__ = ["VM"]

_VM_ID_NAMESPACE = uuid.UUID("6f1c2a8e-4b1d-4c2e-9a53-0e6b5d7f3a10")


class VM(msgspec.Struct, frozen=True, gc=False):
    """One simulated VM (or role instance) and where it runs.

    A msgspec Struct rather than a dataclass: a frozen dataclass costs ~35 times more to
    build, and a 100,000-VM fleet builds one per VM on every start. ``gc=False``: VMs
    hold only strings and numbers, so the collector need not walk them.
    """

    name: str
    scope_id: str
    host: str
    address: str
    update_domain: int = 0
    fault_domain: int = 0
    zone: str = ""
    port: int | None = None
    spot: bool = False
    scale_set: str = ""
    location: str = "westeurope"
    size: str = "Standard_D2s_v5"

    @property
    def vm_id(self) -> str:
        """A stable GUID, derived from the name so it survives restarts."""
        return str(uuid.uuid5(_VM_ID_NAMESPACE, self.name))
