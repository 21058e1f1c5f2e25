"""The ``python`` handler: call ``module:function`` with the handler context.

An ``async def`` runs on the agent's loop; a plain function runs in a worker thread so
it cannot stall polling (a thread cannot be killed: past its timeout it is only
abandoned). Returning ``False`` fails; a string is logged as the detail.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from forewarn.agent.config_schema import PythonSpec
from forewarn.agent.handlers.base import Handler, HandlerContext, HandlerFailed

__all__ = ["PythonHandler", "resolve"]


def resolve(target: str) -> Callable[..., Any]:
    """Import ``module:function``; raise ``HandlerFailed`` saying what is missing."""
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import-time error of user code
        raise HandlerFailed(f"cannot import {module_name}: {type(exc).__name__}: {exc}") from None
    function = getattr(module, attr, None)
    if not callable(function):
        raise HandlerFailed(f"{module_name} has no function {attr}")
    return function  # type: ignore[no-any-return]


class PythonHandler(Handler):
    """The function gets a ``HandlerContext``; raising or returning False fails."""

    kind = "python"

    def __init__(self, name: str, spec: PythonSpec) -> None:
        super().__init__(name, spec.timeout, spec.on_receipt)
        self.spec = spec
        self._function: Callable[..., Any] | None = None

    def function(self) -> Callable[..., Any]:
        """The target, imported once."""
        if self._function is None:
            self._function = resolve(self.spec.target)
        return self._function

    async def prepare(self, ctx: HandlerContext) -> str:
        function = self.function()
        ctx = replace(ctx, options=dict(self.spec.options))
        try:
            if inspect.iscoroutinefunction(function):
                result = await function(ctx)
            else:
                result = await asyncio.to_thread(function, ctx)
                if inspect.isawaitable(result):
                    result = await result
        except HandlerFailed:
            raise
        except Exception as exc:
            raise HandlerFailed(f"{self.spec.target} raised {type(exc).__name__}: {exc}") from None
        if result is False:
            raise HandlerFailed(f"{self.spec.target} returned False")
        return result if isinstance(result, str) else ""
