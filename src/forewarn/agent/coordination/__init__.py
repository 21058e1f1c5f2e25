"""Coordination backends: where agents of one event's VMs say whether they are ready."""

from __future__ import annotations

from forewarn.agent.config_schema import Coordination
from forewarn.agent.coordination.base import Claim, CoordinationError, Coordinator, Vote
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


def connect(config: Coordination) -> Coordinator:
    """The backend ``config`` names (connections open lazily, on first use)."""
    if config.backend == "postgres":
        return PostgresCoordinator(config.url, config.namespace, config.ttl, config.table)
    return RedisCoordinator(config.url, config.namespace, config.ttl)
