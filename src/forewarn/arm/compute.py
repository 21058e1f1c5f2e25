"""Microsoft.Compute's routes over the fleet: VMs, scale sets and their instances,
availability sets (read, lists, instance views, policies), the actions that become
platform operations, the operations' status, and the Maintenance provider's acknowledge.

Each handler takes a routed ``Call`` (its path's names in order: subscription, group,
then the resource's) and answers ARM's JSON.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from forewarn.arm.errors import ArmError
from forewarn.arm.lro import LongRunning, encode_name
from forewarn.arm.paging import page
from forewarn.arm.paths import shown_name
from forewarn.arm.policies import apply_settings
from forewarn.arm.render import Renderer
from forewarn.arm.resources import ArmFleet, ScaleSet
from forewarn.arm.wire import Call, answer, base_url, read_json
from forewarn.contract import EventStatus
from forewarn.fabric import (
    Fabric,
    FabricError,
    OperationRecord,
    OperationRequest,
    pending_maintenance,
)
from forewarn.fleet import VM

__all__ = ["VIA", "ComputeRoutes"]

VIA = "arm"
#: A VM's (or instances') action and the user operation it is; a scale set's
#: ``osRollingUpgrade`` reimages every live instance (the OS upgrade).
_OPERATIONS = {
    "restart": "user-reboot",
    "redeploy": "user-redeploy",
    "reimage": "reimage",
    "reimageall": "reimage",
    "osrollingupgrade": "reimage",
}


class ComputeRoutes:
    """The compute provider's handlers."""

    VM_ACTIONS = ("restart", "redeploy", "reimage", "simulateeviction", "performmaintenance")
    SCALE_SET_ACTIONS = (
        "restart", "redeploy", "reimage", "reimageall", "osrollingupgrade", "delete",
        "performmaintenance",
    )  # fmt: skip

    def __init__(self, fabric: Fabric, fleet: ArmFleet, lro: LongRunning) -> None:
        self.fabric = fabric
        self.fleet = fleet
        self.lro = lro
        self.render = Renderer(fabric, fleet)

    # -------------------------------------------------------------------- lists

    async def list_vms(self, call: Call) -> Response:
        live = [vm for vm in self.fleet.vms.values() if not self.fabric.is_deleted(vm.name)]
        expand = _expand(call)
        return answer(page(call.request, live, lambda vm: self.render.vm(vm.name, expand=expand)))

    async def list_scale_sets(self, call: Call) -> Response:
        live = [s for s in self.fleet.scale_sets.values() if self._live(s)]
        return answer(page(call.request, live, self.render.scale_set))

    async def list_availability_sets(self, call: Call) -> Response:
        sets = list(self.fleet.availability_sets.values())
        return answer(page(call.request, sets, lambda s: self.render.availability_set(s.id)))

    async def list_instances(self, call: Call) -> Response:
        sset = self._scale_set(call.path.names[2])
        expand = _expand(call)
        ids = [i for i, n in sset.instances.items() if not self.fabric.is_deleted(n)]
        return answer(
            page(call.request, ids, lambda i: self.render.instance(sset, i, expand=expand))
        )

    # ---------------------------------------------------------------- resources

    async def vm(self, call: Call) -> Response:
        vm = self._vm(call.path.names[2])
        if call.request.method == "GET":
            if _status_only(call):
                return answer(self.render.status_only(vm))
            return answer(self.render.vm(vm.name, expand=_expand(call)))
        props = _properties(await read_json(call.request, required=True))
        await self._set_policies(
            [vm.scope_id], props.get("scheduledEventsPolicy"), props.get("scheduledEventsProfile")
        )
        return answer(self.render.vm(vm.name))

    async def vm_instance_view(self, call: Call) -> Response:
        return answer(self.render.instance_view(self._vm(call.path.names[2])))

    async def scale_set(self, call: Call) -> Response:
        sset = self._scale_set(call.path.names[2])
        method = call.request.method
        if method == "GET":
            return answer(self.render.scale_set(sset))
        if method == "DELETE":
            return self._accepted(call, [await self._submit("scale-in", self._live(sset))])
        props = _properties(await read_json(call.request, required=True))
        vm_profile = props.get("virtualMachineProfile")
        if vm_profile is not None and not isinstance(vm_profile, dict):
            raise ArmError(
                400, "InvalidParameter", "properties.virtualMachineProfile must be an object."
            )
        profile = None if vm_profile is None else vm_profile.get("scheduledEventsProfile")
        await self._set_policies(sset.scope_ids, props.get("scheduledEventsPolicy"), profile)
        return answer(self.render.scale_set(sset))

    async def instance(self, call: Call) -> Response:
        sset, instance_id, vm_name = self._instance(call)
        if _status_only(call):
            return answer(self.render.status_only(self.fabric.topology.vms[vm_name]))
        return answer(self.render.instance(sset, instance_id, expand=_expand(call)))

    async def instance_view(self, call: Call) -> Response:
        _, _, vm_name = self._instance(call)
        return answer(self.render.instance_view(self.fabric.topology.vms[vm_name]))

    async def availability_set(self, call: Call) -> Response:
        scope = self.fleet.availability_set(call.path.names[2])
        if call.request.method == "GET":
            return answer(self.render.availability_set(scope.id))
        body = await read_json(call.request, required=True)
        await self._set_policies([scope.id], _properties(body).get("scheduledEventsPolicy"), None)
        return answer(self.render.availability_set(scope.id))

    # ------------------------------------------------------------------ actions

    async def vm_action(self, call: Call) -> Response:
        vm = self._vm(call.path.names[2])
        return await self._act_on(call, vm.name, _last(call))

    async def instance_action(self, call: Call) -> Response:
        _, _, vm_name = self._instance(call)
        return await self._act_on(call, vm_name, _last(call))

    async def delete_instance(self, call: Call) -> Response:
        _, _, vm_name = self._instance(call)
        return self._accepted(call, [await self._submit("scale-in", [vm_name])])

    async def scale_set_action(self, call: Call) -> Response:
        sset = self._scale_set(call.path.names[2])
        action = _last(call)
        live = self._live(sset)
        body = await read_json(call.request, required=action == "delete")
        chosen = self._chosen(sset, body, live, required=action == "delete")
        if action == "delete":
            return self._accepted(call, [await self._submit("scale-in", chosen)])
        if action == "performmaintenance":
            return self._accepted(call, await self._perform_maintenance(chosen))
        self._check_idle(chosen)
        kind = _OPERATIONS[action]
        return self._accepted(call, [await self._submit(kind, [n]) for n in chosen])

    async def _act_on(self, call: Call, vm_name: str, action: str) -> Response:
        if action == "simulateeviction":
            await self._submit("spot-eviction", [vm_name])
            return answer(status=204)
        if action == "performmaintenance":
            return self._accepted(call, await self._perform_maintenance([vm_name]))
        await read_json(call.request)  # a body, if any, must still be sound
        return self._accepted(call, [await self._submit(_OPERATIONS[action], [vm_name])])

    async def _perform_maintenance(self, vm_names: list[str]) -> list[OperationRecord]:
        """Customer-initiated maintenance: the VMs' pending platform maintenance starts now
        (its events approved, as a VM would), or a 409 when none is pending."""
        events = []
        for name in vm_names:
            event = pending_maintenance(self.fabric.events(), name)
            if event is None:
                raise ArmError(
                    409,
                    "OperationNotAllowed",
                    f"No maintenance is pending for VM '{name}': there is nothing to start.",
                )
            events.append((name, event))
        for name, event in events:
            if event.status is EventStatus.SCHEDULED:
                self.fabric.approve(self.fabric.topology.vms[name], [event.id], via=VIA)
        await self.fabric.durable()
        ops = {e.operation_id: self.fabric.operation(e.operation_id) for _, e in events}
        return list(ops.values())

    async def _submit(self, kind: str, vms: list[str]) -> OperationRecord:
        op = self.fabric.submit(OperationRequest(kind=kind, vms=tuple(vms), via=VIA))
        await self.fabric.durable()
        return op

    def _check_idle(self, vms: list[str]) -> None:
        """A restart is refused whole when one VM is busy (409), before any operation."""
        now = self.fabric.clock.now()
        user_kinds = set(_OPERATIONS.values())
        for op in self.fabric.operations():
            if op.kind not in user_kinds or op.state not in ("scheduled", "started"):
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

    def _accepted(self, call: Call, ops: list[OperationRecord]) -> Response:
        request = call.request
        url = self.fleet.operation_url(base_url(request), encode_name(ops), call.version)
        delay = self.lro.retry_after_ms(ops)
        headers = {
            "Azure-AsyncOperation": url,
            "Location": url + "&monitor=true",
            "Retry-After": str(max(1, round(delay / 1000))),
            "retry-after-ms": str(delay),
        }
        return answer(status=202, headers=headers)

    async def operation_status(self, call: Call) -> Response:
        request, name = call.request, call.path.names[2]
        status = self.lro.status(name)
        if request.query_params.get("monitor") == "true":
            if status["status"] == "InProgress":
                delay = self.lro.retry_after_ms(self.lro.operations(name))
                return answer(status=202, headers={
                    "Location": str(request.url), "retry-after-ms": str(delay),
                    "Retry-After": str(max(1, round(delay / 1000))),
                })  # fmt: skip
            if status["status"] != "Succeeded":
                return answer(status, 200)
            return answer(status=200)
        headers = {}
        if status["status"] == "InProgress":
            headers = {"retry-after-ms": str(self.lro.retry_after_ms(self.lro.operations(name)))}
        return answer(status, 200, headers)

    # ----------------------------------------------------------------- policies

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

    # -------------------------------------------------------------- acknowledge

    async def acknowledge_all(self, call: Call) -> Response:
        """``.../scheduledevents/acknowledge`` with ``{"value": [ids]}``."""
        if call.path.names[3].lower() != "acknowledge":
            raise ArmError(
                405, "MethodNotAllowed", "POST a scheduled event's /acknowledge, not the event."
            )
        body = await read_json(call.request, required=True)
        value = body.get("value")
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise ArmError(400, "InvalidParameter", "value must be a list of event ids.")
        return await self._acknowledge(call, list(dict.fromkeys(value)))

    async def acknowledge_one(self, call: Call) -> Response:
        """``.../scheduledevents/{id}/acknowledge``."""
        await read_json(call.request)  # a body, if any, must still be sound
        return await self._acknowledge(call, [call.path.names[3]])

    async def _acknowledge(self, call: Call, ids: list[str]) -> Response:
        """The events are approved as their VMs would approve them on the endpoint (all
        or none); a VM's managed identity approves as that VM when the event lists it."""
        kind, name = call.path.shape.split("/")[6], call.path.names[2]
        scopes = self._scopes_of(kind, name)
        caller = call.caller_vm
        approvals: list[tuple[str, str]] = []
        for event_id in ids:
            try:
                event = self.fabric.event(event_id)
            except FabricError:
                event = None
            if event is None or event.scope_id not in scopes:
                raise ArmError(
                    404,
                    "ResourceNotFound",
                    f"The scheduled event '{shown_name(event_id)}' was not found for "
                    f"resource '{shown_name(name)}'.",
                )
            by = caller if caller in event.resources else event.resources[0]
            approvals.append((by, event.id))
        for vm_name, event_id in approvals:
            self.fabric.approve(self.fabric.topology.vms[vm_name], [event_id], via=VIA)
        await self.fabric.durable()
        return answer({"value": "Successfully Approved"})

    # ----------------------------------------------------------------- look-ups

    def resource_id(self, kind: str, name: str) -> str:
        """The ARM id of a fleet resource (404 when there is none)."""
        if kind == "virtualmachines":
            return self.fleet.resource_id("virtualMachines", self.fleet.vm(name).name)
        if kind == "virtualmachinescalesets":
            return self.fleet.resource_id("virtualMachineScaleSets", self._scale_set(name).name)
        scope = self.fleet.availability_set(name)
        return self.fleet.resource_id("availabilitySets", scope.id)

    def _scopes_of(self, kind: str, name: str) -> set[str]:
        if kind == "virtualmachines":
            return {self.fleet.vm(name).scope_id}
        if kind == "virtualmachinescalesets":
            return set(self.fleet.scale_set(name).scope_ids)
        return {self.fleet.availability_set(name).id}

    def _vm(self, name: str) -> VM:
        vm = self.fleet.vm(name)
        if self.fabric.is_deleted(vm.name):
            raise self.fleet.not_found("virtualMachines", vm.name)
        return vm

    def _scale_set(self, name: str) -> ScaleSet:
        sset = self.fleet.scale_set(name)
        if not self._live(sset):
            raise self.fleet.not_found("virtualMachineScaleSets", sset.name)
        return sset

    def _live(self, sset: ScaleSet) -> list[str]:
        return [n for n in sset.instances.values() if not self.fabric.is_deleted(n)]

    def _instance(self, call: Call) -> tuple[ScaleSet, str, str]:
        sset = self._scale_set(call.path.names[2])
        instance_id = call.path.names[3]
        vm_name = self.fleet.instance(sset, instance_id)
        if self.fabric.is_deleted(vm_name):
            raise self.fleet.not_found(
                f"virtualMachineScaleSets/{sset.name}/virtualMachines", instance_id
            )
        return sset, instance_id, vm_name

    def _chosen(
        self, sset: ScaleSet, body: dict[str, Any], live: list[str], *, required: bool
    ) -> list[str]:
        """The instances a scale-set action names (``instanceIds``), or every live one."""
        ids = body.get("instanceIds")
        if ids is None:
            if required:
                raise ArmError(400, "InvalidParameter", "instanceIds is required.")
            return live
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            raise ArmError(400, "InvalidParameter", "instanceIds must be a list of instance ids.")
        if ids == ["*"]:
            return live
        names = [self.fleet.instance(sset, i) for i in dict.fromkeys(ids)]
        gone = [n for n in names if n not in live]
        if gone:
            raise self.fleet.not_found(
                f"virtualMachineScaleSets/{sset.name}/virtualMachines", gone[0]
            )
        return names


def _last(call: Call) -> str:
    return call.path.shape.rsplit("/", 1)[1]


def _expand(call: Call) -> bool:
    return call.request.query_params.get("$expand", "").lower() == "instanceview"


def _status_only(call: Call) -> bool:
    return call.request.query_params.get("statusOnly", "").lower() == "true"


def _properties(body: dict[str, Any]) -> dict[str, Any]:
    props = body.get("properties")
    if props is None:
        return {}
    if not isinstance(props, dict):
        raise ArmError(400, "InvalidParameter", "properties must be an object.")
    return props
