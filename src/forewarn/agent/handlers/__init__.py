"""Handlers: what the agent does for an event (exec, webhook, python, kubernetes)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from forewarn.agent.config_schema import (
    AgentConfig,
    ExecSpec,
    HandlerSpec,
    KubernetesSpec,
    PythonSpec,
    WebhookSpec,
)
from forewarn.agent.handlers.base import Handler, HandlerFailed
from forewarn.agent.handlers.command import ExecHandler

if TYPE_CHECKING:
    from forewarn.agent.handlers.context import HandlerContext
    from forewarn.agent.handlers.kubernetes import KubernetesHandler
    from forewarn.agent.handlers.pycall import PythonHandler
    from forewarn.agent.handlers.webhook import WebhookHandler

__all__ = [
    "ExecHandler",
    "Handler",
    "HandlerContext",
    "HandlerFailed",
    "KubernetesHandler",
    "PythonHandler",
    "WebhookHandler",
    "build_handler",
    "build_handlers",
]


def __getattr__(name: str) -> object:
    # The kubernetes, webhook and python handlers are imported when a config names them:
    # an agent that runs none does not hold their modules (or urllib) in memory; the
    # context, when a handler first runs.
    if name == "HandlerContext":
        from forewarn.agent.handlers.context import HandlerContext

        return HandlerContext
    if name == "PythonHandler":
        from forewarn.agent.handlers.pycall import PythonHandler

        return PythonHandler
    if name == "KubernetesHandler":
        from forewarn.agent.handlers.kubernetes import KubernetesHandler

        return KubernetesHandler
    if name == "WebhookHandler":
        from forewarn.agent.handlers.webhook import WebhookHandler

        return WebhookHandler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_handler(name: str, spec: HandlerSpec) -> Handler:
    """The handler a spec describes."""
    if isinstance(spec, ExecSpec):
        return ExecHandler(name, spec)
    if isinstance(spec, WebhookSpec):
        from forewarn.agent.handlers.webhook import WebhookHandler

        return WebhookHandler(name, spec)
    if isinstance(spec, PythonSpec):
        from forewarn.agent.handlers.pycall import PythonHandler

        return PythonHandler(name, spec)
    if isinstance(spec, KubernetesSpec):
        from forewarn.agent.handlers.kubernetes import KubernetesHandler

        return KubernetesHandler(name, spec)
    raise TypeError(f"no handler for {spec!r}")  # pragma: no cover - the union is closed


def build_handlers(config: AgentConfig) -> dict[str, Handler]:
    """Every configured handler by name; python targets are imported now, to fail early."""
    handlers = {name: build_handler(name, spec) for name, spec in config.handlers.items()}
    if any(isinstance(spec, PythonSpec) for spec in config.handlers.values()):
        from forewarn.agent.handlers.pycall import PythonHandler

        for handler in handlers.values():
            if isinstance(handler, PythonHandler):
                handler.function()
    return handlers
