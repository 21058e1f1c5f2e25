"""What every event's flow shares: configuration, identity and the agent's parts.

Its own module, with its types for the type checker only, so the daemon builds it at
start-up without loading the flows' machinery (handler runs, approval, coordination),
which an agent with no event never needs. A NamedTuple, as the records an idle agent
makes (``State``'s, ``Decision``, ``StoredEvent``): the dataclasses module is ~0.2 MB of
it, and loads with the first handler run (``handlers.context``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from forewarn.agent.clock import AgentClock
    from forewarn.agent.config_schema import AgentConfig
    from forewarn.agent.coordination import Coordinator
    from forewarn.agent.handlers import Handler
    from forewarn.agent.metrics import AgentMetrics
    from forewarn.agent.state import State

__all__ = ["Services"]


class Services(NamedTuple):
    """What every event's flow shares: configuration, identity and the agent's parts."""

    config: AgentConfig
    vm_name: str
    clock: AgentClock
    state: State
    metrics: AgentMetrics
    handlers: dict[str, Handler]
    coordinator: Coordinator | None
    approve: Callable[[str], Awaitable[None]]
    log: Any
