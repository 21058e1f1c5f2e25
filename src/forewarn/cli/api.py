"""The CLI's client of a running server's control API."""

from __future__ import annotations

from typing import Any

import click
import httpx

from .errors import fail

__all__ = ["ControlApi"]


class ControlApi:
    """A tiny synchronous client of the control API; every failure is one error line."""

    def __init__(self, ctx: click.Context) -> None:
        obj = ctx.find_root().obj
        self.base = obj["control"]
        headers = {"Authorization": f"Bearer {obj['token']}"} if obj["token"] else {}
        self._client = httpx.Client(
            base_url=self.base, headers=headers, timeout=30, trust_env=False
        )

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """``method path``: the decoded JSON (or text) of a successful answer."""
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            fail(
                f"cannot reach the control API at {self.base} ({exc}); is `forewarn serve` running?"
            )
        if response.status_code >= 400:
            try:
                message = response.json().get("error", response.text)
            except ValueError:
                message = response.text
            if response.status_code == 404 and message == "Not found":
                fail(f"{self.base} is not a forewarn control API (the metadata endpoint?)")
            fail(f"{message} (HTTP {response.status_code})")
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text
