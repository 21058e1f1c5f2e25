"""A package whose names are imported on first use (PEP 562's module ``__getattr__``).

The contract and the VM side's packages (``forewarn.contract``, ``forewarn.client``,
``forewarn.agent``) re-export many names, and a VM command needs a few: importing each
name's module only when it is first asked
for keeps ``forewarn --version`` and the VM commands within their start-up budget.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module

__all__ = ["lazy_getattr"]


def lazy_getattr(
    package: str, where: Mapping[str, str], prefix: str = ""
) -> Callable[[str], object]:
    """The ``__getattr__`` of ``package``: ``where`` maps each name to its module
    (``prefix`` + the map's value); the value is kept in the package once imported."""

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(prefix + module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
