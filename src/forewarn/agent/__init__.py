"""``forewarn agent``: the daemon on a VM that reacts to Scheduled Events.

config (TOML, layered) -> rules (first match) -> handlers (exec, webhook, python,
kubernetes) -> approval (never, after-handlers, solo, coordinated over Redis or
PostgreSQL) -> recovery, with every step persisted in SQLite. Imports only
``forewarn.client`` and ``forewarn.contract``: it ships to real VMs.
"""

from forewarn.agent.clock import AgentClock
from forewarn.agent.config_layers import load_config
from forewarn.agent.config_schema import AgentConfig, Approval, ConfigError
from forewarn.agent.daemon import Agent, AgentError

__all__ = [
    "Agent",
    "AgentClock",
    "AgentConfig",
    "AgentError",
    "Approval",
    "ConfigError",
    "load_config",
]
