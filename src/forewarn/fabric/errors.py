"""Errors of the simulated platform, each carrying what the user needs to act.

FabricError
├── FleetError            the fleet file or database topology is invalid
├── NotFoundError         an unknown VM, host, scope, event or operation
│   └── EventNotVisible   a VM approves an event its scope does not show
├── InvalidOperation      a request the platform cannot carry out as asked
├── InvalidTransition     a lifecycle step that is not allowed from the current state
└── ClockError            e.g. moving a clock backwards, or advancing a real clock
"""

from __future__ import annotations

__all__ = [
    "ClockError",
    "EventNotVisible",
    "FabricError",
    "FleetError",
    "InvalidOperation",
    "InvalidTransition",
    "NotFoundError",
]


class FabricError(Exception):
    """Base of every error the platform raises on purpose."""


class FleetError(FabricError):
    """The fleet description is invalid; the message names the offending entry."""


class NotFoundError(FabricError):
    """Something named in a request does not exist."""


class EventNotVisible(NotFoundError):
    """A VM referred to an event id that its document does not show."""


class InvalidOperation(FabricError):
    """An operation request that cannot be carried out as asked."""


class InvalidTransition(FabricError):
    """A lifecycle step that is not allowed from the event's current state."""


class ClockError(FabricError):
    """A clock was asked to do something it cannot (go backwards, jump while real)."""
