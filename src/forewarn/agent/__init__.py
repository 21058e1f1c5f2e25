"""``forewarn agent``: the daemon on a VM that reacts to Scheduled Events.

config (TOML, layered) -> rules (first match) -> handlers (exec, webhook, python,
kubernetes) -> approval (never, after-handlers, solo, coordinated over Redis or
PostgreSQL) -> recovery, with every step persisted in SQLite. Imports only
``forewarn.client`` and ``forewarn.contract``: it ships to real VMs.
"""

import sys
from typing import TYPE_CHECKING


def _import_msgspec() -> None:
    """msgspec, imported as if typing_extensions were not installed.

    msgspec takes ``get_type_hints``, ``Required`` and ``NotRequired`` from
    typing_extensions when it can, and from ``typing`` otherwise, which has all three
    since Python 3.11 (the oldest forewarn runs on): typing_extensions would be ~0.3 MB
    of every VM's idle agent for nothing. Every module of this package runs this first,
    so the agent's configuration gets this msgspec (and so does whoever imports msgspec
    later in the process). Where msgspec or typing_extensions is loaded already, nothing
    changes."""
    hide = "typing_extensions" not in sys.modules and "msgspec" not in sys.modules
    if hide:
        sys.modules["typing_extensions"] = None  # type: ignore[assignment]  # ImportError
    try:
        import msgspec  # noqa: F401
    finally:
        if hide:
            del sys.modules["typing_extensions"]


_import_msgspec()

from forewarn.agent.config_layers import load_config  # noqa: E402
from forewarn.agent.config_schema import AgentConfig, Approval, ConfigError  # noqa: E402

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
