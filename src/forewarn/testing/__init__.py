"""A testing kit for users' own code: forewarn in-process, on a virtual clock.

``Forewarn`` serves the real metadata endpoint on loopback (one port per VM) and the
control API; the pytest plugin (``forewarn.testing.plugin``, loaded through the
``pytest11`` entry point) hands it to tests as fixtures: ``forewarn``, ``forewarn_url``,
``forewarn_client``, ``forewarn_vm`` and ``forewarn_fleet``.
"""

from forewarn.testing.server import Forewarn, ForewarnError, fleet_mapping

__all__ = ["Forewarn", "ForewarnError", "fleet_mapping"]
