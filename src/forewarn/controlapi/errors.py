"""How a call to the control API fails: one exception tree, each message one line.

Pure (no httpx), so the CLI's error funnel can name these classes without loading HTTP.
Every user of the control API turns them into its own way of failing: the CLI prints
the message as its error line, the scenario engine marks a step failed, the testing kit
raises ``ForewarnError``.
"""

from __future__ import annotations

__all__ = [
    "ControlError",
    "ControlRefused",
    "ControlSettingError",
    "ControlUnreachable",
    "NotControlApi",
]


class ControlError(Exception):
    """Base of every failure of a control API call; ``str()`` is one line saying what to fix."""


class ControlSettingError(ControlError, ValueError):
    """A control URL or token that cannot be used (nothing was sent)."""


class ControlUnreachable(ControlError):
    """No answer at all: nobody listening, refused, reset, timed out."""


class NotControlApi(ControlError):
    """Something answered, but not a forewarn control API (the metadata endpoint, a proxy…)."""


class ControlRefused(ControlError):
    """The server answered an error status; ``error`` is its message, ``status`` the code."""

    def __init__(self, error: str, status: int, method: str, path: str) -> None:
        super().__init__(f"{error} (HTTP {status})")
        self.error = error
        self.status = status
        self.method = method
        self.path = path
