"""``forewarn agent``: the daemon on a VM that reacts to Scheduled Events.

config (TOML, layered) -> rules (first match) -> handlers (exec, webhook, python,
kubernetes) -> approval (never, after-handlers, solo, coordinated over Redis or
PostgreSQL) -> recovery, with every step persisted in SQLite. Imports only
``forewarn.client`` and ``forewarn.contract``: it ships to real VMs.
"""

from typing import TYPE_CHECKING

from forewarn.agent.config_layers import load_config
from forewarn.agent.config_schema import AgentConfig, Approval, ConfigError

if TYPE_CHECKING:
    from forewarn.agent.clock import AgentClock
    from forewarn.agent.daemon import Agent, AgentError


def __getattr__(name: str) -> object:
    # The daemon (asyncio, the client) loads when asked for: ``forewarn agent status``
    # and ``check-config`` run without it.
    if name in ("Agent", "AgentError"):
        from forewarn.agent import daemon

        return getattr(daemon, name)
    if name == "AgentClock":
        from forewarn.agent.clock import AgentClock

        return AgentClock
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Agent",
    "AgentClock",
    "AgentConfig",
    "AgentError",
    "Approval",
    "ConfigError",
    "load_config",
]
