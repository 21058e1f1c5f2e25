"""``forewarn agent``: the daemon on a VM that reacts to Scheduled Events.

config (TOML, layered) -> rules (first match) -> handlers (exec, webhook, python,
kubernetes) -> approval (never, after-handlers, solo, coordinated over Redis or
PostgreSQL) -> recovery, with every step persisted in SQLite. Imports only
``forewarn.client`` and ``forewarn.contract``: it ships to real VMs.
"""

from typing import TYPE_CHECKING

from forewarn.contract.lazynames import lazy_getattr

if TYPE_CHECKING:
    from forewarn.agent.clock import AgentClock
    from forewarn.agent.config_layers import load_config
    from forewarn.agent.config_schema import AgentConfig, Approval, ConfigError
    from forewarn.agent.daemon import Agent, AgentError

#: Where each name lives, loaded on first use: the daemon (asyncio, the client) only when
#: asked for, so ``forewarn agent status`` and ``check-config`` run without it.
_LAZY = {
    "AgentClock": "forewarn.agent.clock",
    "load_config": "forewarn.agent.config_layers",
    "AgentConfig": "forewarn.agent.config_schema",
    "Approval": "forewarn.agent.config_schema",
    "ConfigError": "forewarn.agent.config_schema",
    "Agent": "forewarn.agent.daemon",
    "AgentError": "forewarn.agent.daemon",
}

__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = [
    "Agent",
    "AgentClock",
    "AgentConfig",
    "AgentError",
    "Approval",
    "ConfigError",
    "load_config",
]
