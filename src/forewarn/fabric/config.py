"""Platform-wide settings of a fabric (its own module: the façade and the rules read it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["DAY", "FabricConfig"]

DAY = 24 * 3600.0


@dataclass(frozen=True, slots=True)
class FabricConfig:
    """Platform-wide settings.

    ``time_scale`` divides every catalogue duration (notice, impact, hold, idle timeout);
    the announced DurationInSeconds stays as in production.
    ``enablement`` "on-first-request" is the faithful behaviour; "always" treats every
    scope as enabled from the start.
    """

    time_scale: float = 1.0
    enablement: Literal["on-first-request", "always"] = "on-first-request"
    idle_disable_seconds: float = DAY
    last_request_persist_seconds: float = 60.0
    preview_user_operation_limit: int = 10

    def __post_init__(self) -> None:
        if not self.time_scale > 0:
            raise ValueError("time scale must be positive")

    def scaled(self, seconds: float) -> float:
        """A catalogue duration at this time scale."""
        return seconds / self.time_scale
