"""The ``webhook`` handler: POST a JSON body built from a template, with retries.

Transport errors, 429 and 5xx are retried (``retries`` times, doubling ``backoff``);
any other status is an answer, and fails at once unless it is 2xx.
"""

from __future__ import annotations

import asyncio
from typing import Any

from forewarn.agent.config_schema import WebhookSpec
from forewarn.agent.handlers.base import Handler, HandlerContext, HandlerFailed
from forewarn.agent.template import DEFAULT_BODY, render

__all__ = ["WebhookHandler", "template_values"]


def template_values(ctx: HandlerContext) -> dict[str, Any]:
    """The values placeholders stand for."""
    event = ctx.event_json
    return {
        **event,
        "event": event,
        "vm_name": ctx.vm_name,
        "phase": ctx.phase,
        "deadline": ctx.deadline.isoformat() if ctx.deadline else "",
    }


class WebhookHandler(Handler):
    """Success is a 2xx answer."""

    kind = "webhook"

    def __init__(self, name: str, spec: WebhookSpec) -> None:
        super().__init__(name, spec.timeout, spec.on_receipt)
        self.spec = spec

    def body(self, ctx: HandlerContext) -> Any:
        """The JSON body this event gets."""
        return render(
            self.spec.body if self.spec.body is not None else DEFAULT_BODY, template_values(ctx)
        )

    async def prepare(self, ctx: HandlerContext) -> str:
        body = self.body(ctx)
        spec = self.spec
        delay = spec.backoff
        last = ""
        import httpx  # here: an agent without webhooks never loads httpx (~10 MB)

        async with httpx.AsyncClient(timeout=spec.timeout, trust_env=spec.use_proxy_env) as http:
            for attempt in range(spec.retries + 1):
                if attempt:
                    await asyncio.sleep(delay)
                    delay *= 2
                try:
                    response = await http.post(spec.url, json=body, headers=spec.headers)
                except httpx.HTTPError as exc:
                    last = f"{type(exc).__name__}: {exc}".rstrip(": ")
                    continue
                if response.is_success:
                    return f"HTTP {response.status_code} after {attempt + 1} attempt(s)"
                last = f"HTTP {response.status_code}: {response.text[:200]}"
                if response.status_code != 429 and response.status_code < 500:
                    break
        raise HandlerFailed(f"POST {spec.url}: {last}")
