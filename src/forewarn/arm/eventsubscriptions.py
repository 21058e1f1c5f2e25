"""``Microsoft.EventGrid/eventSubscriptions`` on the subscription or on a resource's scope
(PUT creates or replaces after the validation handshake, GET, DELETE), and Resource
Graph's query route: the ARM side of issue 18, routed from ``ArmApp._dispatch``."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from forewarn.arm.errors import ArmError
from forewarn.arm.resourcegraph import GRAPH_VERSIONS, answer_query
from forewarn.arm.wire import answer, check_api_version, read_json
from forewarn.eventgrid import EventGrid, SubscriptionError, parse_subscription
from forewarn.eventgrid.hub import HandshakeFailed

__all__ = ["EVENTGRID_VERSIONS", "event_subscription", "resource_graph"]

EVENTGRID_VERSIONS = ("2020-06-01", "2025-04-01")


def _unavailable() -> ArmError:
    return ArmError(404, "NotFound", "Event Grid and Resource Graph are not served here.")


async def resource_graph(request: Request, hub: EventGrid | None) -> Response:
    if hub is None:
        raise _unavailable()
    if request.method != "POST":
        raise ArmError(405, "MethodNotAllowed", f"{request.method} is not allowed here.")
    check_api_version(request, GRAPH_VERSIONS, "resources")
    return answer(answer_query(await read_json(request, required=True), hub.ledger))


async def event_subscription(
    request: Request, hub: EventGrid | None, scope: str, name: str
) -> Response:
    """``scope`` is the ARM id the subscription hangs under (its subjects' prefix)."""
    if hub is None:
        raise _unavailable()
    check_api_version(request, EVENTGRID_VERSIONS, "eventSubscriptions")
    method = request.method
    if method == "GET":
        sub = hub.get(name)
        if sub is None or sub.spec.scope.lower() != scope.lower():
            raise _missing(name)
        return answer(_with_id(sub.out(), scope, name))
    if method == "DELETE":
        sub = hub.get(name)
        if sub is None or sub.spec.scope.lower() != scope.lower():
            return answer(status=204)
        await hub.delete(name)
        return answer(status=200)
    if method != "PUT":
        raise ArmError(405, "MethodNotAllowed", f"{method} is not allowed on this resource.")
    body = await read_json(request, required=True)
    try:
        spec = parse_subscription(name, body, scope)
        sub = await hub.create(spec, replace=True)
    except HandshakeFailed as exc:
        raise ArmError(400, "BadRequest", str(exc)) from None
    except SubscriptionError as exc:
        raise ArmError(400, "InvalidRequest", str(exc)) from None
    return answer(_with_id(sub.out(), scope, name), 201)


def _with_id(out: dict[str, object], scope: str, name: str) -> dict[str, object]:
    return {"id": f"{scope}/providers/Microsoft.EventGrid/eventSubscriptions/{name}", **out}


def _missing(name: str) -> ArmError:
    return ArmError(404, "ResourceNotFound", f"The event subscription '{name[:64]}' was not found.")
