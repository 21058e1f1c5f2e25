"""The Azure control plane around the endpoint: the ARM routes azure-mgmt-compute calls
(operations, policies), the Maintenance provider's acknowledge, on a listener of its own.
"""

from forewarn.arm.app import ArmApp
from forewarn.arm.errors import ArmError
from forewarn.arm.listener import ArmListener, ArmSettings, serve_arm
from forewarn.arm.resources import DEFAULT_RESOURCE_GROUP, DEFAULT_SUBSCRIPTION, ArmFleet

__all__ = [
    "DEFAULT_RESOURCE_GROUP",
    "DEFAULT_SUBSCRIPTION",
    "ArmApp",
    "ArmError",
    "ArmFleet",
    "ArmListener",
    "ArmSettings",
    "serve_arm",
]
