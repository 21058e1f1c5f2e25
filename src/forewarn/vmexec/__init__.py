"""``forewarn exec``: any program, unmodified, as a VM of the fleet.

COMMAND runs in its own network, UTS, mount and PID namespaces (a user namespace too
when not root): ``169.254.169.254:80`` there is the metadata endpoint as that VM, its
host name is the VM's computer name, ``--forward`` brings ports of the host's loopback in,
and nothing else of the host's network is there. forewarn relays every connection from
the host's network, from the VM's own loopback address (or to its own port), so the
endpoint, the report and the dashboard know the VM as they know any poll from it.

Its own room, above the control API's client and beside the CLI: the standard library
and that client only (import-linter holds it to that), nothing of the emulator.
"""

from forewarn.vmexec.errors import EndpointUnusable, ExecError, NamespacesUnavailable, VmNotFound
from forewarn.vmexec.launch import (
    ENDPOINT_ADDRESS,
    HIDDEN_VARIABLES,
    NON_VNET_ADDRESS,
    Forward,
    parse_forward,
    run,
)
from forewarn.vmexec.target import VmTarget, find_vm

__all__ = [
    "ENDPOINT_ADDRESS",
    "HIDDEN_VARIABLES",
    "NON_VNET_ADDRESS",
    "EndpointUnusable",
    "ExecError",
    "Forward",
    "NamespacesUnavailable",
    "VmNotFound",
    "VmTarget",
    "find_vm",
    "parse_forward",
    "run",
]
