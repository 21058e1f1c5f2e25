"""The CLI's client of a running server's control API.

Every way of failing (a malformed ``--control`` URL, nobody listening, an error answer)
ends as one error line that says what to fix.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import click
import httpx

from forewarn.cli.errors import fail

__all__ = ["ControlApi", "control_base", "segment"]


def control_base(url: str, origin: str = "--control") -> str:
    """``url`` as the base of every request, or one error line naming what is wrong.

    ``origin`` says where the URL came from (the flag or ``FOREWARN_CONTROL``).
    """
    given = f"{origin} {url!r}"
    if "://" not in url:
        fail(f"{given} is missing its scheme: use http://{url.lstrip('/')}")
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        fail(f"{given} is not a valid URL ({exc}); expected http://HOST:PORT")
    if parsed.scheme not in ("http", "https"):
        fail(f"{given}: the control API speaks http or https, not {parsed.scheme}")
    if not parsed.host:
        fail(f"{given} names no host; expected http://HOST:PORT")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        fail(f"{given}: port {parsed.port} is outside 1..65535")
    return url.rstrip("/")


def segment(value: str) -> str:
    """``value`` as one path segment: a name never reaches another route (``a/../x``)."""
    return quote(value, safe="")


def _bearer(token: str | None, origin: str) -> dict[str, str]:
    if not token:
        return {}
    if not all("!" <= ch <= "~" for ch in token):
        fail(f"{origin} must be printable ASCII without spaces (a Bearer token)")
    return {"Authorization": f"Bearer {token}"}


class ControlApi:
    """A tiny synchronous client of the control API; every failure is one error line."""

    def __init__(self, ctx: click.Context) -> None:
        obj = ctx.find_root().obj
        self.base = control_base(obj["control"], obj["control_origin"])
        self._client = httpx.Client(
            base_url=self.base,
            headers=_bearer(obj["token"], obj["token_origin"]),
            timeout=30,
            trust_env=False,
        )

    def response(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """``method path`` as it was answered (only an unreachable server is an error)."""
        try:
            return self._client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            fail(
                f"cannot reach the control API at {self.base} ({exc}); is `forewarn serve` running?"
            )

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """``method path``: the decoded JSON (or text) of a successful answer."""
        response = self.response(method, path, **kwargs)
        if response.status_code >= 400:
            try:
                message = response.json().get("error", response.text)
            except (ValueError, AttributeError):
                message = response.text
            if response.status_code == 404 and message == "Not found":
                fail(f"{self.base} is not a forewarn control API (the metadata endpoint?)")
            fail(f"{message} (HTTP {response.status_code})")
        if response.headers.get("content-type", "").startswith("application/json"):
            try:
                return response.json()
            except ValueError:
                fail(f"{self.base} answered malformed JSON; is it a forewarn control API?")
        return response.text
