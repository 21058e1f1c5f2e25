"""How ``forewarn exec`` fails before COMMAND runs: one line that says what to do.

::

    ExecError
    ├── VmNotFound              the fleet has no such VM
    ├── EndpointUnusable        the endpoint does not answer as that VM
    └── NamespacesUnavailable   this system cannot make the VM's namespaces
"""

from __future__ import annotations

__all__ = ["EndpointUnusable", "ExecError", "NamespacesUnavailable", "VmNotFound"]


class ExecError(Exception):
    """Base of every failure of ``forewarn exec`` before COMMAND runs; ``str()`` is one line."""


class VmNotFound(ExecError):
    """The server's fleet has no VM of that name."""


class EndpointUnusable(ExecError):
    """The endpoint cannot be reached as the VM (down, elsewhere, answering as another)."""


class NamespacesUnavailable(ExecError):
    """No network namespace here (not Linux, user namespaces off, no privilege)."""
