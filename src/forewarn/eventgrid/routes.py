"""The control API's Event Grid routes: subscriptions (ARM's body), their deliveries, and
the validationUrl a webhook may GET to finish a manual handshake. Mounted by the control
app when the server publishes (``ControlApp(eventgrid=...)``)."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from forewarn.eventgrid.hub import EventGrid, HandshakeFailed
from forewarn.eventgrid.subscriptions import SubscriptionError, parse_subscription

__all__ = ["EventGridRoutes"]

MAX_BODY = 64 * 1024


def _json(data: Any, status: int = 200) -> Response:
    return Response(json.dumps(data), status, media_type="application/json")


def _error(message: str, status: int) -> Response:
    return _json({"error": message}, status)


class EventGridRoutes:
    """Handlers over one hub."""

    def __init__(self, hub: EventGrid) -> None:
        self.hub = hub

    async def list_subscriptions(self, request: Request) -> Response:
        return _json([s.out() for s in self.hub.subscriptions()])

    async def create_subscription(self, request: Request) -> Response:
        raw = await request.body()
        if len(raw) > MAX_BODY:
            return _error(f"request body is larger than {MAX_BODY} bytes", 413)
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            return _error("request body is not valid JSON", 400)
        if not isinstance(body, dict):
            return _error("request body must be a JSON object: {name, properties}", 400)
        try:
            spec = parse_subscription(body.get("name"), body)
        except SubscriptionError as exc:
            return _error(str(exc), 400)
        if self.hub.get(spec.name) is not None:
            return _error(f"a subscription called {spec.name!r} exists already", 409)
        try:
            sub = await self.hub.create(spec)
        except HandshakeFailed as exc:
            return _error(str(exc), 400)
        except SubscriptionError as exc:
            return _error(str(exc), 409)
        return _json(sub.out(), 201)

    async def get_subscription(self, request: Request) -> Response:
        name = request.path_params["name"]
        sub = self.hub.get(name)
        if sub is None:
            return _error(f"no Event Grid subscription called {name[:64]!r}", 404)
        return _json(sub.out())

    async def delete_subscription(self, request: Request) -> Response:
        name = request.path_params["name"]
        if not await self.hub.delete(name):
            return _error(f"no Event Grid subscription called {name[:64]!r}", 404)
        return Response(status_code=204)

    async def deliveries(self, request: Request) -> Response:
        name = request.query_params.get("subscription")
        raw = request.query_params.get("limit", "200")
        if not raw.isdigit() or not 0 <= int(raw) <= 2000:
            return _error("query parameter limit must be an integer from 0 to 2000", 400)
        return _json([a.out() for a in self.hub.log.list(name, int(raw))])

    async def validate(self, request: Request) -> Response:
        name = request.path_params["name"]
        if not await self.hub.validate(name, request.query_params.get("code", "")):
            return _error("no subscription awaiting validation with this name and code", 404)
        return _json({"validated": name})
