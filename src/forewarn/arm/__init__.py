"""The Azure control plane around the endpoint: the ARM routes azure-mgmt-compute calls
(operations, policies), the Maintenance provider's acknowledge, on a listener of its own.
"""

from forewarn.arm.app import ArmApp
from forewarn.arm.errors import ArmError
from forewarn.arm.listener import ArmListener, ArmSettings, serve_arm
from forewarn.arm.resources import ArmFleet

__all__ = [
    "ArmApp",
    "ArmError",
    "ArmFleet",
    "ArmListener",
    "ArmSettings",
    "serve_arm",
]
