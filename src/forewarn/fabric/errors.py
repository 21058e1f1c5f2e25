"""Errors of the simulated platform, each carrying what the user needs to act.

FabricError
├── NotFoundError         an unknown VM, host, scope, event or operation
│   └── EventNotVisible   a VM approves an event its scope does not show
├── InvalidOperation      a request the platform cannot carry out as asked
├── InvalidTransition     a lifecycle step that is not allowed from the current state
├── ClockError            e.g. moving a clock backwards, or advancing a real clock
├── Conflict              another operation on the same VM is still in progress
└── StoreUnavailable      the state cannot be written now (disk full, file gone): nothing
                          changed; readers keep the last committed state
"""

from __future__ import annotations

from typing import Self

__all__ = [
    "ClockError",
    "Conflict",
    "EventNotVisible",
    "FabricError",
    "InvalidOperation",
    "InvalidTransition",
    "NotFoundError",
    "StoreUnavailable",
]


class FabricError(Exception):
    """Base of every error the platform raises on purpose."""


class NotFoundError(FabricError, LookupError):
    """Something named in a request does not exist."""


class EventNotVisible(NotFoundError):
    """A VM referred to an event id that its document does not show."""


class InvalidOperation(FabricError):
    """An operation request that cannot be carried out as asked."""


class InvalidTransition(FabricError):
    """A lifecycle step that is not allowed from the event's current state."""


class ClockError(FabricError):
    """A clock was asked to do something it cannot (go backwards, jump while real)."""


class Conflict(FabricError):
    """A request that collides with work in progress (Azure answers 409 Conflict)."""


class StoreUnavailable(FabricError):
    """A change could not be made durable, so it was not made at all.

    ``permanent`` is True when retrying cannot help (the database file was deleted or
    replaced under the server); otherwise the server retries by itself.
    """

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent

    def again(self) -> Self:
        """The same failure as a new object, to raise once more: one object raised time
        after time (a store refused for good, a failure shared by a group of commits)
        would gather every raise's frames in its traceback, and each log line that shows
        it would be longer than the last."""
        fresh = type(self).__new__(type(self))
        fresh.args = self.args
        fresh.__dict__.update(self.__dict__)
        return fresh
