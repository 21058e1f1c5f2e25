"""The ARM app: every path parsed once into its shape (``paths``), routed on a table of
(method, shape) → handler, and every refusal answered as ARM's error from one place.

Handlers are thin: parse (``wire``), call the fabric, render (``render``). A new route
is one row of ``_table``; an unknown path, a known path with another method, and an
unexpected failure (ARM's JSON 500 with a request id, never a traceback page) are
answered here.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from forewarn.arm.account import AccountRoutes
from forewarn.arm.compute import ComputeRoutes
from forewarn.arm.errors import ArmError, from_fabric
from forewarn.arm.eventsubscriptions import event_subscription, resource_graph
from forewarn.arm.identity import Identity
from forewarn.arm.lro import LongRunning
from forewarn.arm.paths import ArmPath, parse_path
from forewarn.arm.resources import ArmFleet
from forewarn.arm.wire import (
    COMPUTE_VERSIONS,
    MAINTENANCE_VERSIONS,
    Call,
    answer,
    authenticate,
    base_url,
    check_api_version,
    error,
)
from forewarn.eventgrid import EventGrid
from forewarn.fabric import Fabric, FabricError
from forewarn.fleet import UnknownName
from forewarn.imds.segments import raw_path
from forewarn.imds.tokens import TokenSigner

log = logging.getLogger(__name__)

__all__ = ["ArmApp"]

Handler = Callable[[Call], Awaitable[Response]]
_METHODS = ["GET", "HEAD", "PUT", "PATCH", "POST", "DELETE"]
_SUB = "subscriptions/{}"
_GROUP = "subscriptions/{}/resourcegroups/{}"
_COMPUTE = _GROUP + "/providers/microsoft.compute"
_SUB_COMPUTE = _SUB + "/providers/microsoft.compute"
_VM = _COMPUTE + "/virtualmachines/{}"
_VMSS = _COMPUTE + "/virtualmachinescalesets/{}"
_INSTANCE = _VMSS + "/virtualmachines/{}"
_AVSET = _COMPUTE + "/availabilitysets/{}"
_MAINTENANCE = "/providers/microsoft.maintenance/scheduledevents/{}"
_GRID = "/providers/microsoft.eventgrid/eventsubscriptions/{}"


@dataclass(frozen=True, slots=True)
class _Row:
    handler: Handler
    #: The api-versions accepted and the type named when one is not (None: not checked).
    versions: tuple[str, str] | None = None
    kind: str = ""


class ArmApp:
    """The ARM surface over one fabric."""

    def __init__(
        self,
        fabric: Fabric,
        fleet: ArmFleet,
        *,
        token: str | None = None,
        client_secret: str | None = None,
        eventgrid: EventGrid | None = None,
        signer: TokenSigner | None = None,
    ) -> None:
        """``signer``: the one the metadata endpoint mints the VMs' tokens with (default:
        the fleet's, derived from ``token`` as every process of the fleet derives it)."""
        self.fabric = fabric
        self.eventgrid = eventgrid
        self.fleet = fleet
        self.token = token
        self.signer = signer or TokenSigner.for_fleet(token, fleet.subscription)
        self.lro = LongRunning(fabric)
        self.identity = Identity(self.signer, token=token, client_secret=client_secret)
        self.account = AccountRoutes(fabric, fleet)
        self.compute = ComputeRoutes(fabric, fleet, self.lro)
        self._table = self._routes()
        self.asgi = Starlette(routes=[Route("/{path:path}", self._endpoint, methods=_METHODS)])

    def route_table(self) -> list[tuple[str, str, tuple[str, str] | None]]:
        """Every (method, path shape, api-versions accepted or None) served, by path then
        method: what the documentation's ARM routes page lists (``{}`` is any name)."""
        rows = [(method, shape, row.versions) for (method, shape), row in self._table.items()]
        return sorted(rows, key=lambda row: (row[1], row[0]))

    def _routes(self) -> dict[tuple[str, str], _Row]:
        """Every (method, shape) served, and its handler."""
        a, c = self.account, self.compute
        cv = COMPUTE_VERSIONS
        rows: dict[tuple[str, str], _Row] = {
            ("GET", "subscriptions"): _Row(a.subscriptions),
            ("GET", _SUB): _Row(a.subscription),
            ("GET", "tenants"): _Row(a.tenants),
            ("GET", _SUB + "/resourcegroups"): _Row(a.groups),
            ("GET", _GROUP): _Row(a.group),
            ("HEAD", _GROUP): _Row(a.group_exists),
            ("GET", _SUB + "/resources"): _Row(a.resources),
            ("GET", _GROUP + "/resources"): _Row(a.resources),
            ("POST", "providers/microsoft.resourcegraph/resources"): _Row(self._graph),
            ("GET", _SUB_COMPUTE + "/locations/{}/operations/{}"): _Row(
                c.operation_status, cv, "locations/operations"
            ),
        }
        for scope in (_SUB_COMPUTE, _COMPUTE):
            rows[("GET", scope + "/virtualmachines")] = _Row(c.list_vms, cv, "virtualMachines")
            rows[("GET", scope + "/virtualmachinescalesets")] = _Row(
                c.list_scale_sets, cv, "virtualMachineScaleSets"
            )
            rows[("GET", scope + "/availabilitysets")] = _Row(
                c.list_availability_sets, cv, "availabilitySets"
            )
        for method in ("GET", "PUT", "PATCH"):
            rows[(method, _VM)] = _Row(c.vm, cv, "virtualMachines")
            rows[(method, _VMSS)] = _Row(c.scale_set, cv, "virtualMachineScaleSets")
            rows[(method, _AVSET)] = _Row(c.availability_set, cv, "availabilitySets")
        rows[("DELETE", _VMSS)] = _Row(c.scale_set, cv, "virtualMachineScaleSets")
        rows[("GET", _VM + "/instanceview")] = _Row(c.vm_instance_view, cv, "virtualMachines")
        rows[("GET", _VMSS + "/virtualmachines")] = _Row(
            c.list_instances, cv, "virtualMachineScaleSets/virtualMachines"
        )
        rows[("GET", _INSTANCE)] = _Row(c.instance, cv, "virtualMachineScaleSets/virtualMachines")
        rows[("DELETE", _INSTANCE)] = _Row(
            c.delete_instance, cv, "virtualMachineScaleSets/virtualMachines"
        )
        rows[("GET", _INSTANCE + "/instanceview")] = _Row(
            c.instance_view, cv, "virtualMachineScaleSets/virtualMachines"
        )
        for action in ComputeRoutes.VM_ACTIONS:
            rows[("POST", f"{_VM}/{action}")] = _Row(c.vm_action, cv, "virtualMachines")
            rows[("POST", f"{_INSTANCE}/{action}")] = _Row(
                c.instance_action, cv, "virtualMachineScaleSets/virtualMachines"
            )
        for action in ComputeRoutes.SCALE_SET_ACTIONS:
            rows[("POST", f"{_VMSS}/{action}")] = _Row(
                c.scale_set_action, cv, "virtualMachineScaleSets"
            )
        for owner in (_VM, _VMSS, _AVSET):
            rows[("POST", owner + _MAINTENANCE)] = _Row(
                c.acknowledge_all, MAINTENANCE_VERSIONS, "scheduledevents"
            )
            rows[("POST", owner + _MAINTENANCE + "/acknowledge")] = _Row(
                c.acknowledge_one, MAINTENANCE_VERSIONS, "scheduledevents"
            )
            for method in ("GET", "PUT", "DELETE"):
                rows[(method, owner + _GRID)] = _Row(self._resource_grid)
        for method in ("GET", "PUT", "DELETE"):
            rows[(method, _SUB + _GRID)] = _Row(self._subscription_grid)
        return rows

    # ------------------------------------------------------------------ serving

    async def _endpoint(self, request: Request) -> Response:
        try:
            return await self._serve(request)
        except ClientDisconnect:
            return Response(status_code=499)  # nobody is left to read it
        except Exception:  # ARM's 500, with the request id the log line names
            request_id = str(uuid.uuid4())
            log.exception("ARM: internal error answering %s (request %s)", request.method,
                          request_id)  # fmt: skip
            body = ArmError(
                500,
                "InternalServerError",
                f"The server encountered an internal error (request id {request_id}).",
            )
            return answer(body.body(), 500, {"x-ms-request-id": request_id})

    async def _serve(self, request: Request) -> Response:
        try:
            path = parse_path(raw_path(request.scope))  # routed on the path as sent
        except ArmError as exc:
            return error(exc, request.method)
        if Identity.handles(path):  # asked for before any token
            return await self.identity.answer(request, path)
        try:
            if path.shape == "metadata/{}":  # the cloud's endpoints: asked before a token
                return self.account.cloud_metadata(request, path)
            caller = authenticate(request, self.token, self.signer, base_url(request))
            return await self._dispatch(Call(request, path, caller, self.fleet.names))
        except ArmError as exc:
            return error(exc, request.method)
        except (FabricError, UnknownName) as exc:
            return error(from_fabric(exc), request.method)

    async def _dispatch(self, call: Call) -> Response:
        path = call.path
        row = self._table.get((call.request.method, path.shape))
        if row is None:
            if any((m, path.shape) in self._table for m in _METHODS):
                raise ArmError(
                    405,
                    "MethodNotAllowed",
                    f"The requested method {call.request.method} is not allowed on this resource.",
                )
            raise _no_route(path, call.request.method, call.request.query_params.get("api-version"))
        names = path.names
        if path.shape.startswith(_GROUP):
            self.fleet.check_group(names[0], names[1])
        elif path.shape.startswith(_SUB + "/"):
            self.fleet.check_subscription(names[0])
        if row.versions is not None:
            call.version = check_api_version(call.request, row.versions, row.kind)
        return await row.handler(call)

    # ------------------------------------------------------- Event Grid, Graph

    async def _graph(self, call: Call) -> Response:
        return await resource_graph(call.request, self.eventgrid)

    async def _subscription_grid(self, call: Call) -> Response:
        scope = f"/subscriptions/{self.fleet.subscription}"
        return await event_subscription(call.request, self.eventgrid, scope, call.path.names[1])

    async def _resource_grid(self, call: Call) -> Response:
        """An event subscription on a resource's scope: that resource's events only."""
        kind = call.path.shape.split("/")[6]
        scope = self.compute.resource_id(kind, call.path.names[2])
        return await event_subscription(call.request, self.eventgrid, scope, call.path.names[3])


def _no_route(path: ArmPath, method: str, version: str | None) -> ArmError:
    """ARM's 404 for a path nothing here serves: an unknown namespace, or resource type
    in a known one, as ARM words them; any other path, plainly."""
    shape = path.shape.split("/")
    if "providers" not in shape:
        return ArmError(404, "NotFound", f"No ARM route here for {method} {path.shown()}.")
    at = len(shape) - 1 - shape[::-1].index("providers")
    namespace = shape[at + 1] if at + 1 < len(shape) else ""
    if namespace not in _NAMESPACES:
        return ArmError(
            404,
            "NoRegisteredProviderFound",
            f"No registered resource provider found for namespace '{namespace[:80]}'.",
        )
    kind = next((s for s in reversed(shape) if s != "{}"), "")
    return ArmError(
        404,
        "InvalidResourceType",
        f"The resource type '{kind[:80]}' could not be found in the namespace "
        f"'{_NAMESPACES[namespace]}' for api version '{(version or '')[:40]}'.",
    )


_NAMESPACES = {
    n.lower(): n
    for n in (
        "Microsoft.Compute",
        "Microsoft.Maintenance",
        "Microsoft.EventGrid",
        "Microsoft.ResourceGraph",
    )
}
