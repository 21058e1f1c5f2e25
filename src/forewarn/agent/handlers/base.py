"""What every handler is: an async ``prepare`` (before the event) and ``recover`` (after).

A handler reports failure by raising ``HandlerFailed`` (or anything else); it never
decides about approval. Its time limit is enforced by the runner, which cancels it:
handlers that start processes must end them when cancelled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from forewarn.agent.handlers.context import HandlerContext, Phase

__all__ = ["Handler", "HandlerContext", "HandlerFailed", "Phase"]


def __getattr__(name: str) -> object:
    # The context is made when a handler runs: its module (and dataclasses) load then.
    if name in ("HandlerContext", "Phase"):
        from forewarn.agent.handlers import context

        return getattr(context, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class HandlerFailed(Exception):
    """A handler did not do its job; the message says what went wrong."""


class Handler:
    """Base class: ``prepare`` does the work; ``recover`` does it again in phase recover."""

    kind = "handler"

    def __init__(self, name: str, timeout: float, on_receipt: bool = False) -> None:
        self.name = name
        self.timeout = timeout
        self.on_receipt = on_receipt

    async def prepare(self, ctx: HandlerContext) -> str:
        """Act before the event; return a short detail for the log."""
        raise NotImplementedError

    async def recover(self, ctx: HandlerContext) -> str:
        """Act after the event left the document (default: ``prepare`` in phase recover)."""
        return await self.prepare(ctx)

    async def run(self, ctx: HandlerContext) -> str:
        """The phase ``ctx`` names."""
        if ctx.phase == "recover":
            return await self.recover(ctx)
        return await self.prepare(ctx)

    def __repr__(self) -> str:
        return f"<{self.kind} handler {self.name!r}>"
