"""The ARM app: the routes azure-mgmt-compute calls for the fleet's VMs, scale sets and
availability sets, the operations' status, and the Maintenance provider's acknowledge.

Handlers are thin: parse (``wire``), call the fabric, render (``render``). ARM paths are
case-insensitive, so one route takes every path and ``_dispatch`` matches lower-cased
segments. Event Grid and Resource Graph (issue 18) add their own branch in ``_dispatch``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from forewarn.arm.errors import ArmError, from_fabric
from forewarn.arm.eventsubscriptions import event_subscription, resource_graph
from forewarn.arm.identity import Identity
from forewarn.arm.lro import LongRunning, encode_name
from forewarn.arm.policies import apply_settings
from forewarn.arm.render import Renderer
from forewarn.arm.resources import ArmFleet
from forewarn.arm.wire import (
    COMPUTE_VERSIONS,
    MAINTENANCE_VERSIONS,
    answer,
    check_api_version,
    check_token,
    error,
    read_json,
)
from forewarn.eventgrid import EventGrid
from forewarn.fabric import Fabric, FabricError, OperationRecord, OperationRequest
from forewarn.fleet import UnknownName

__all__ = ["ArmApp"]

Handler = Callable[[], Awaitable[Response]]
VIA = "arm"
#: A VM's (or instances') action and the user operation it is; a scale set's
#: ``osRollingUpgrade`` reimages every live instance (the OS upgrade).
_ACTIONS = {
    "restart": "user-reboot",
    "redeploy": "user-redeploy",
    "reimage": "reimage",
    "reimageall": "reimage",
}


class ArmApp:
    """The ARM surface over one fabric."""

    def __init__(
        self,
        fabric: Fabric,
        fleet: ArmFleet,
        *,
        token: str | None = None,
        eventgrid: EventGrid | None = None,
    ) -> None:
        self.fabric = fabric
        self.eventgrid = eventgrid
        self.fleet = fleet
        self.token = token
        self.lro = LongRunning(fabric)
        self.render = Renderer(fabric, fleet)
        self.identity = Identity(token)
        self.asgi = Starlette(
            routes=[Route("/{path:path}", self._endpoint, methods=["GET", "PUT", "PATCH",
                                                                   "POST", "DELETE"])]
        )  # fmt: skip

    async def _endpoint(self, request: Request) -> Response:
        raw = [s for s in request.url.path.split("/") if s]
        if Identity.handles([s.lower() for s in raw]):  # asked for before any token
            return await self.identity.answer(request, raw)
        try:
            check_token(request, self.token)
            return await self._dispatch(request)
        except ArmError as exc:
            return error(exc)
        except (FabricError, UnknownName) as exc:
            return error(from_fabric(exc))

    # ------------------------------------------------------------------ routing

    async def _dispatch(self, request: Request) -> Response:
        raw = [s for s in request.url.path.split("/") if s]
        low = [s.lower() for s in raw]
        method = request.method
        if low == ["providers", "microsoft.resourcegraph", "resources"]:
            return await resource_graph(request, self.eventgrid)
        if len(low) == 6 and low[0] == "subscriptions" and low[2:5] == [
            "providers", "microsoft.eventgrid", "eventsubscriptions"
        ]:  # fmt: skip
            self.fleet.check_group(raw[1], self.fleet.resource_group)
            scope = f"/subscriptions/{self.fleet.subscription}"
            return await event_subscription(request, self.eventgrid, scope, raw[5])
        if len(low) == 8 and low[0] == "subscriptions" and low[2:6] == [
            "providers", "microsoft.compute", "locations", low[5]
        ] and low[6] == "operations":  # fmt: skip
            check_api_version(request, COMPUTE_VERSIONS, "locations/operations")
            return self._operation_status(request, raw[7])
        if len(low) < 8 or low[0] != "subscriptions" or low[2] != "resourcegroups":
            raise _no_route(request)
        if low[4:6] != ["providers", "microsoft.compute"]:
            raise _no_route(request)
        self.fleet.check_group(raw[1], raw[3])
        kind, name, rest = low[6], raw[7], low[8:]
        if (
            rest[:3] == ["providers", "microsoft.eventgrid", "eventsubscriptions"]
            and len(rest) == 4
        ):  # on a resource's scope: its events only
            scope = self._resource_id(kind, name)
            return await event_subscription(request, self.eventgrid, scope, raw[11])
        if rest[:2] == ["providers", "microsoft.maintenance"]:
            version = check_api_version(request, MAINTENANCE_VERSIONS, "scheduledevents")
            del version
            return await self._acknowledge(request, kind, name, raw[8:])
        if kind == "virtualmachines":
            version = check_api_version(request, COMPUTE_VERSIONS, "virtualMachines")
            return await self._vm(request, method, name, rest, version)
        if kind == "virtualmachinescalesets":
            version = check_api_version(request, COMPUTE_VERSIONS, "virtualMachineScaleSets")
            return await self._scale_set(request, method, name, raw[8:], version)
        if kind == "availabilitysets" and not rest:
            check_api_version(request, COMPUTE_VERSIONS, "availabilitySets")
            return await self._availability_set(request, method, name)
        raise _no_route(request)

    # ---------------------------------------------------------------- resources

    async def _vm(
        self, request: Request, method: str, name: str, rest: list[str], version: str
    ) -> Response:
        vm = self.fleet.vm(name)
        if self.fabric.is_deleted(vm.name):
            raise _gone("virtualMachines", vm.name)
        if not rest:
            if method == "GET":
                return answer(self.render.vm(vm.name))
            if method in ("PUT", "PATCH"):
                body = await read_json(request, required=True)
                props = _properties(body)
                await self._set_policies(
                    [vm.scope_id], props.get("scheduledEventsPolicy"),
                    props.get("scheduledEventsProfile"),
                )  # fmt: skip
                return answer(self.render.vm(vm.name))
            raise _method(request)
        action = _action(request, rest)
        if action == "simulateeviction":
            await self._submit("spot-eviction", [vm.name])
            return answer(status=204)
        kind = _ACTIONS.get(action)
        if kind is None or action == "reimageall":
            raise _no_route(request)
        ops = [await self._submit(kind, [vm.name])]
        return self._accepted(request, ops, version)

    async def _scale_set(
        self, request: Request, method: str, name: str, rest: list[str], version: str
    ) -> Response:
        sset = self.fleet.scale_set(name)
        live = [n for n in sset.instances.values() if not self.fabric.is_deleted(n)]
        if not live:
            raise _gone("virtualMachineScaleSets", sset.name)
        low = [s.lower() for s in rest]
        if not rest:
            if method == "GET":
                return answer(self.render.scale_set(sset))
            if method in ("PUT", "PATCH"):
                body = await read_json(request, required=True)
                props = _properties(body)
                vm_profile = props.get("virtualMachineProfile")
                profile = None
                if isinstance(vm_profile, dict):
                    profile = vm_profile.get("scheduledEventsProfile")
                if vm_profile is not None and not isinstance(vm_profile, dict):
                    raise ArmError(
                        400,
                        "InvalidParameter",
                        "properties.virtualMachineProfile must be an object.",
                    )
                await self._set_policies(
                    sset.scope_ids, props.get("scheduledEventsPolicy"), profile
                )
                return answer(self.render.scale_set(sset))
            if method == "DELETE":
                ops = [await self._submit("scale-in", live)]
                return self._accepted(request, ops, version)
            raise _method(request)
        if len(low) == 3 and low[0] == "virtualmachines":
            vm_name = self.fleet.instance(sset, rest[1])
            if self.fabric.is_deleted(vm_name):
                raise _gone(f"virtualMachineScaleSets/{sset.name}/virtualMachines", rest[1])
            action = _action(request, low[2:])
            if action == "simulateeviction":
                await self._submit("spot-eviction", [vm_name])
                return answer(status=204)
            kind = _ACTIONS.get(action)
            if kind is None:
                raise _no_route(request)
            return self._accepted(request, [await self._submit(kind, [vm_name])], version)
        action = _action(request, low)
        body = await read_json(request, required=action == "delete")
        chosen = self._instances(sset, body, live, required=action == "delete")
        if action == "delete":
            return self._accepted(request, [await self._submit("scale-in", chosen)], version)
        kind = "reimage" if action == "osrollingupgrade" else _ACTIONS.get(action)
        if kind is None:
            raise _no_route(request)
        self._check_idle(chosen)
        ops = [await self._submit(kind, [n]) for n in chosen]
        return self._accepted(request, ops, version)

    async def _availability_set(self, request: Request, method: str, name: str) -> Response:
        scope = self.fleet.availability_set(name)
        if method == "GET":
            return answer(self.render.availability_set(scope.id))
        if method in ("PUT", "PATCH"):
            body = await read_json(request, required=True)
            await self._set_policies(
                [scope.id], _properties(body).get("scheduledEventsPolicy"), None
            )
            return answer(self.render.availability_set(scope.id))
        raise _method(request)

    # -------------------------------------------------------------- operations

    async def _submit(self, kind: str, vms: list[str]) -> OperationRecord:
        op = self.fabric.submit(OperationRequest(kind=kind, vms=tuple(vms), via=VIA))
        await self.fabric.durable()
        return op

    def _check_idle(self, vms: list[str]) -> None:
        """A scale set's restart is refused whole when one instance is busy (409), before
        any instance's operation is created."""
        now = self.fabric.clock.now()
        for op in self.fabric.operations():
            if op.kind not in _ACTIONS.values() or op.state not in (
                "scheduled", "started"
            ):  # fmt: skip
                continue
            if op.started_at is not None and now >= op.started_at + op.impact_seconds:
                continue
            busy = sorted(set(op.vms) & set(vms))
            if busy:
                raise ArmError(
                    409,
                    "OperationNotAllowed",
                    f"VM {busy[0]!r} already has a {op.kind} in progress (operation {op.id}).",
                )

    def _instances(
        self, sset: Any, body: dict[str, Any], live: list[str], *, required: bool
    ) -> list[str]:
        ids = body.get("instanceIds")
        if ids is None:
            if required:
                raise ArmError(400, "InvalidParameter", "instanceIds is required.")
            return live
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            raise ArmError(400, "InvalidParameter", "instanceIds must be a list of instance ids.")
        names = [self.fleet.instance(sset, i) for i in dict.fromkeys(ids)]
        gone = [n for n in names if n not in live]
        if gone:
            raise _gone(f"virtualMachineScaleSets/{sset.name}/virtualMachines", gone[0])
        return names

    def _accepted(self, request: Request, ops: list[OperationRecord], version: str) -> Response:
        base = f"{request.url.scheme}://{request.url.netloc}"
        url = self.fleet.operation_url(base, encode_name(ops), version)
        delay = self.lro.retry_after_ms(ops)
        headers = {
            "Azure-AsyncOperation": url,
            "Location": url + "&monitor=true",
            "Retry-After": str(max(1, round(delay / 1000))),
            "retry-after-ms": str(delay),
        }
        return answer(status=202, headers=headers)

    def _operation_status(self, request: Request, name: str) -> Response:
        status = self.lro.status(name)
        if request.query_params.get("monitor") == "true":
            if status["status"] == "InProgress":
                ops = self.lro.operations(name)
                delay = self.lro.retry_after_ms(ops)
                return answer(status=202, headers={
                    "Location": str(request.url), "retry-after-ms": str(delay),
                    "Retry-After": str(max(1, round(delay / 1000))),
                })  # fmt: skip
            if status["status"] != "Succeeded":
                return answer(status, 200)
            return answer(status=200)
        headers = {}
        if status["status"] == "InProgress":
            delay = self.lro.retry_after_ms(self.lro.operations(name))
            headers = {"retry-after-ms": str(delay)}
        return answer(status, 200, headers)

    # ------------------------------------------------------------------ policies

    async def _set_policies(self, scope_ids: list[str], policy: Any, profile: Any) -> None:
        """Apply a body's policy and profile to every scope of a resource, or to none
        (one durable change: answered once written)."""
        changed = {}
        for scope_id in scope_ids:
            current = self.fabric.policy(scope_id)
            new_policy = apply_settings(current, policy, profile)
            if new_policy != current:
                changed[scope_id] = new_policy
        if changed:
            self.fabric.set_policy(changed, via=VIA)
            await self.fabric.durable()

    # --------------------------------------------------------------- acknowledge

    async def _acknowledge(
        self, request: Request, kind: str, name: str, rest: list[str]
    ) -> Response:
        """``.../providers/Microsoft.Maintenance/scheduledevents/{id}/acknowledge``, or
        ``.../scheduledevents/acknowledge`` with ``{"value": [ids]}``: the events are
        approved as their VMs would approve them on the endpoint (all or none)."""
        low = [s.lower() for s in rest]
        if request.method != "POST":
            raise _method(request)
        if len(low) == 5 and low[2] == "scheduledevents" and low[4] == "acknowledge":
            ids = [rest[3]]
            await read_json(request)  # a body, if any, must still be sound
        elif len(low) == 4 and low[2:] == ["scheduledevents", "acknowledge"]:
            body = await read_json(request, required=True)
            value = body.get("value")
            if not isinstance(value, list) or not value or not all(
                isinstance(v, str) for v in value
            ):  # fmt: skip
                raise ArmError(400, "InvalidParameter", "value must be a list of event ids.")
            ids = list(dict.fromkeys(value))
        else:
            raise _no_route(request)
        scopes = self._scopes_of(kind, name)
        approvals: list[tuple[str, str]] = []
        for event_id in ids:
            try:
                event = self.fabric.event(event_id)
            except FabricError:
                event = None
            if event is None or event.scope_id not in scopes:
                shown = event_id if len(event_id) <= 64 else event_id[:64] + "..."
                raise ArmError(
                    404,
                    "ResourceNotFound",
                    f"The scheduled event '{shown}' was not found for resource '{name}'.",
                )
            approvals.append((event.resources[0], event.id))
        for vm_name, event_id in approvals:
            self.fabric.approve(self.fabric.topology.vms[vm_name], [event_id], via=VIA)
        await self.fabric.durable()
        return answer({"value": "Successfully Approved"})

    def _resource_id(self, kind: str, name: str) -> str:
        """The ARM id of a fleet resource (404 when there is none)."""
        if kind == "virtualmachines":
            return self.fleet.resource_id("virtualMachines", self.fleet.vm(name).name)
        if kind == "virtualmachinescalesets":
            sset = self.fleet.scale_set(name)
            return self.fleet.resource_id("virtualMachineScaleSets", sset.name)
        if kind == "availabilitysets":
            scope = self.fleet.availability_set(name)
            return self.fleet.resource_id("availabilitySets", scope.id)
        raise ArmError(404, "InvalidResourceType", f"'{kind}' has no scheduled events here.")

    def _scopes_of(self, kind: str, name: str) -> set[str]:
        if kind == "virtualmachines":
            vm = self.fleet.vm(name)
            return {vm.scope_id}
        if kind == "virtualmachinescalesets":
            return set(self.fleet.scale_set(name).scope_ids)
        if kind == "availabilitysets":
            return {self.fleet.availability_set(name).id}
        raise ArmError(404, "InvalidResourceType", f"'{kind}' has no scheduled events here.")


def _properties(body: dict[str, Any]) -> dict[str, Any]:
    props = body.get("properties")
    if props is None:
        return {}
    if not isinstance(props, dict):
        raise ArmError(400, "InvalidParameter", "properties must be an object.")
    return props


def _action(request: Request, rest: list[str]) -> str:
    if len(rest) != 1:
        raise _no_route(request)
    if request.method != "POST":
        raise _method(request)
    return rest[0]


def _gone(kind: str, name: str) -> ArmError:
    return ArmError(
        404, "ResourceNotFound", f"The Resource 'Microsoft.Compute/{kind}/{name}' was not found."
    )


def _no_route(request: Request) -> ArmError:
    path = request.url.path
    shown = path if len(path) <= 200 else path[:200] + "..."
    return ArmError(404, "NotFound", f"No ARM route here for {request.method} {shown}.")


def _method(request: Request) -> ArmError:
    return ArmError(405, "MethodNotAllowed", f"{request.method} is not allowed on this resource.")
