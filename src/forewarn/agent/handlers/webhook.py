"""The ``webhook`` handler: POST a JSON body built from a template, with retries.

Transport errors, 429 and 5xx are retried (``retries`` times, doubling ``backoff``);
any other status is an answer, and fails at once unless it is 2xx.
"""

from __future__ import annotations

import asyncio
import json
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
        data = json.dumps(self.body(ctx), default=_json_default).encode()
        spec = self.spec
        delay = spec.backoff
        last = ""
        for attempt in range(spec.retries + 1):
            if attempt:
                await asyncio.sleep(delay)
                delay *= 2
            try:
                status, answer = await asyncio.to_thread(_post, spec, data)
            except _NoAnswer as exc:
                last = str(exc)
                continue
            if 200 <= status < 300:
                return f"HTTP {status} after {attempt + 1} attempt(s)"
            last = f"HTTP {status}: {answer[:200].decode('utf-8', 'replace')}"
            if status != 429 and status < 500:
                break
        raise HandlerFailed(f"POST {spec.url}: {last}")


class _NoAnswer(Exception):
    """No HTTP answer came; the message says which step failed and why."""


def _json_default(value: Any) -> Any:
    """A TOML date or time in a body: its ISO 8601 text."""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _post(spec: WebhookSpec, data: bytes) -> tuple[int, bytes]:
    """POST ``data`` to ``spec.url`` (blocking: run in a thread): the status and body of
    the answer, redirects included as answers. The standard library's urllib: http.client,
    ssl for https://, the environment's proxies when ``use_proxy_env``."""
    import http.client
    import urllib.error
    import urllib.request

    class NoRedirects(urllib.request.HTTPRedirectHandler):
        """A redirect is an answer (a 3xx fails the handler), never followed."""

        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    proxies = urllib.request.ProxyHandler(None if spec.use_proxy_env else {})
    opener = urllib.request.build_opener(proxies, NoRedirects())
    headers = {"Content-Type": "application/json", **spec.headers}
    request = urllib.request.Request(spec.url, data=data, headers=headers, method="POST")
    try:
        with opener.open(request, timeout=spec.timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read()
    except urllib.error.URLError as exc:  # no connection (refused, no route, TLS, DNS)
        reason = exc.reason
        kind = "ConnectTimeout" if isinstance(reason, TimeoutError) else "ConnectError"
        why = reason.strerror if isinstance(reason, OSError) and reason.strerror else reason
        raise _NoAnswer(f"{kind}: {why}".rstrip(": ")) from None
    except TimeoutError:
        raise _NoAnswer("ReadTimeout: no answer in time") from None
    except (OSError, http.client.HTTPException) as exc:  # reset, closed, not HTTP
        raise _NoAnswer(f"ReadError: {exc}".rstrip(": ")) from None
