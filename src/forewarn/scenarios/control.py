"""The scenario engine's client of a running server's control API (HTTP only).

The engine never reaches into a server's internals: it plays a scenario the way a person
with ``forewarn trigger`` and ``forewarn advance`` would, so it works against any server
(local, remote, scaled out) and the CLI's own client (URL and token handling, one-line
errors) can carry its calls: anything with ``response(method, path, **kwargs)``.
"""

from __future__ import annotations

from typing import Any, Protocol
from urllib.parse import quote

import httpx

from forewarn.scenarios.model import ScenarioError

__all__ = ["ApiError", "Control", "HttpControl", "Transport"]


class Transport(Protocol):
    """What carries the calls (``forewarn.cli.api.ControlApi`` is one)."""

    def response(self, method: str, path: str, **kwargs: Any) -> httpx.Response: ...


class HttpControl:
    """A transport of its own, for scripts and tests: base URL and optional token."""

    def __init__(self, base_url: str, token: str | None = None, timeout: float = 30) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, trust_env=False
        )

    def response(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self._client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ScenarioError(
                f"cannot reach the control API at {self._client.base_url}: {exc}"
            ) from None

    def close(self) -> None:
        self._client.close()


class ApiError(ScenarioError):
    """The server refused a call; ``status`` is its HTTP status, the message its error."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def _segment(value: str) -> str:
    return quote(value, safe="")


class Control:
    """The calls the engine makes, decoded; a refusal raises ApiError."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.transport.response(method, path, **kwargs)
        if response.status_code >= 400:
            try:
                message = str(response.json().get("error", response.text))
            except (ValueError, AttributeError):
                message = response.text
            raise ApiError(message, response.status_code)
        try:
            return response.json()
        except ValueError:
            raise ScenarioError(f"{path} answered something that is not JSON") from None

    def clock(self) -> dict[str, Any]:
        out: dict[str, Any] = self.call("GET", "/api/v1/clock")
        return out

    def reset(self) -> dict[str, Any]:
        """Reset the fleet for a new drill (``POST /api/v1/fleet/reset``)."""
        out: dict[str, Any] = self.call("POST", "/api/v1/fleet/reset", json={})
        return out

    def advance(self, seconds: float) -> dict[str, Any]:
        out: dict[str, Any] = self.call(
            "POST", "/api/v1/clock/advance", json={"seconds": max(0.0, seconds)}
        )
        return out

    def topology(self) -> dict[str, Any]:
        out: dict[str, Any] = self.call("GET", "/api/v1/topology")
        return out

    def vms(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = self.call("GET", "/api/v1/vms")
        return out

    def events(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = self.call("GET", "/api/v1/events")
        return out

    def operations(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = self.call("GET", "/api/v1/operations")
        return out

    def operation(self, op_id: str) -> dict[str, Any]:
        out: dict[str, Any] = self.call("GET", f"/api/v1/operations/{_segment(op_id)}")
        return out

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = self.call("POST", "/api/v1/operations", json=body)
        return out

    def event_action(self, event_id: str, action: str) -> dict[str, Any]:
        out: dict[str, Any] = self.call(
            "POST", f"/api/v1/events/{_segment(event_id)}/{action}", json={}
        )
        return out

    def document(self, vm: str) -> dict[str, Any] | None:
        """The document ``vm`` gets now, or None once it is deleted (404)."""
        try:
            out: dict[str, Any] = self.call("GET", f"/api/v1/documents/{_segment(vm)}")
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        return out

    def history(self, operation_id: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = self.call(
            "GET", "/api/v1/history", params={"operation_id": operation_id, "limit": 10_000}
        )
        return out
