"""Coordination backends: where agents of one event's VMs say whether they are ready.

A backend's module is imported when ``connect`` picks it (or its name is asked for):
an agent that coordinates over Redis does not hold the PostgreSQL one, and one that
does not coordinate holds neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from forewarn.agent.config_schema import Coordination
from forewarn.agent.coordination.base import Claim, CoordinationError, Coordinator, Vote

if TYPE_CHECKING:
    from forewarn.agent.coordination.postgres_backend import PostgresCoordinator
    from forewarn.agent.coordination.redis_backend import RedisCoordinator

__all__ = [
    "Claim",
    "CoordinationError",
    "Coordinator",
    "PostgresCoordinator",
    "RedisCoordinator",
    "Vote",
    "connect",
]


def __getattr__(name: str) -> object:
    if name == "PostgresCoordinator":
        from forewarn.agent.coordination.postgres_backend import PostgresCoordinator

        return PostgresCoordinator
    if name == "RedisCoordinator":
        from forewarn.agent.coordination.redis_backend import RedisCoordinator

        return RedisCoordinator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def connect(config: Coordination) -> Coordinator:
    """The backend ``config`` names (connections open lazily, on first use)."""
    if config.backend == "postgres":
        from forewarn.agent.coordination.postgres_backend import PostgresCoordinator

        return PostgresCoordinator(config.url, config.namespace, config.ttl, config.table)
    from forewarn.agent.coordination.redis_backend import RedisCoordinator

    return RedisCoordinator(config.url, config.namespace, config.ttl)
