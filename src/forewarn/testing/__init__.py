"""A testing kit for users' own code: forewarn in-process, on a virtual clock.

``Forewarn`` serves the real metadata endpoint on loopback (one port per VM) and the
control API; the pytest plugin (``forewarn.testing.plugin``, loaded through the
``pytest11`` entry point) hands it to tests as fixtures: ``forewarn``, ``forewarn_url``,
``forewarn_client``, ``forewarn_vm`` and ``forewarn_fleet``.

The emulator is imported on first use of a name below, not with the package: pytest loads
the plugin in every venv forewarn is installed in, including a VM's, which has no server.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from forewarn.testing.server import Forewarn, ForewarnError, fleet_mapping

__all__ = ["Forewarn", "ForewarnError", "fleet_mapping"]


def __getattr__(name: str) -> object:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module("forewarn.testing.server"), name)
