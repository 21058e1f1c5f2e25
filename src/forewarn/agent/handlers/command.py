"""The ``exec`` handler: a program gets the event as env vars and as JSON on stdin."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from forewarn.agent.config_schema import ExecSpec
from forewarn.agent.events import event_env
from forewarn.agent.handlers.base import Handler, HandlerFailed
from forewarn.agent.handlers.process import run_process, tail

if TYPE_CHECKING:
    from forewarn.agent.handlers.context import HandlerContext

__all__ = ["ExecHandler"]


class ExecHandler(Handler):
    """Success is exit status 0; anything else fails with the end of stderr."""

    kind = "exec"

    def __init__(self, name: str, spec: ExecSpec) -> None:
        super().__init__(name, spec.timeout, spec.on_receipt)
        self.spec = spec

    async def prepare(self, ctx: HandlerContext) -> str:
        env = {
            **os.environ,
            **self.spec.env,
            **event_env(ctx.event, ctx.vm_name, ctx.phase, ctx.deadline),
            "FOREWARN_HANDLER": self.name,
        }
        stdin = json.dumps(ctx.event_json).encode() + b"\n"
        try:
            result = await run_process(
                self.spec.argv, env=env, stdin=stdin, cwd=self.spec.cwd, on_start=ctx.on_process
            )
        except OSError as exc:
            raise HandlerFailed(str(exc.strerror or exc)) from None
        if result.returncode != 0:
            why = tail(result.stderr) or tail(result.stdout) or "no output"
            raise HandlerFailed(f"exit status {result.returncode}: {why}")
        return tail(result.stdout, 200)
