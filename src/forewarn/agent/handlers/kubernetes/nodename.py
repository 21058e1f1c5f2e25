"""The node name of a VM: on a scale set, the computer name the kubelet registered.

Scheduled Events name a scale-set instance ``<scale set>_<instance id>`` while its
computer name (and so the AKS node) is ``<prefix><instance id in base 36, 6 digits>``:
``aks-pool-1234-vmss_13`` is the node ``aks-pool-1234-vmss00000d``. Azure VM names cannot
hold ``_``, so only scale-set instances match. The kubelet lowercases the hostname.
"""

from __future__ import annotations

import re

__all__ = ["node_name"]

_INSTANCE = re.compile(r"^(?P<scale_set>.+)_(?P<instance>\d+)$")
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def _base36(number: int) -> str:
    digits = ""
    while True:
        number, digit = divmod(number, 36)
        digits = _DIGITS[digit] + digits
        if number == 0:
            return digits


def node_name(vm_name: str, override: str = "") -> str:
    """``override`` when given, else the node name ``vm_name`` registers as."""
    if override:
        return override
    match = _INSTANCE.match(vm_name)
    if match is None:
        return vm_name.lower()
    return f"{match['scale_set']}{_base36(int(match['instance'])).rjust(6, '0')}".lower()
