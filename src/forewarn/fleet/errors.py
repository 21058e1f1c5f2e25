"""Errors of the fleet format, each naming the file, line or entry at fault.

FleetError      the fleet description (a file, or the topology a database holds) is invalid
YamlError       a YAML file written by a person cannot be read (syntax, encoding, duplicates)
UnknownName     a VM, host or scope that the fleet does not have (the control API: 404)

Neither is a platform error: a fleet is checked before any platform is built from it.
"""

from __future__ import annotations

__all__ = ["FleetError", "UnknownName", "YamlError"]


class FleetError(ValueError):
    """The fleet description is invalid; the message names the offending entry."""


class YamlError(ValueError):
    """A YAML file cannot be read; the message is one line naming the file and line."""


class UnknownName(LookupError):
    """A name looked up in the topology that is not a VM, host or scope of the fleet."""
