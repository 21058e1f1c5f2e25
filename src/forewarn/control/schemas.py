"""Request and response bodies of the control API (also the source of its OpenAPI)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from forewarn.control.drill_routes import SCHEMAS as DRILL_SCHEMAS
from forewarn.control.drill_routes import fault_body_rules
from forewarn.control.rollout_routes import SCHEMAS as ROLLOUT_SCHEMAS
from forewarn.fabric import MAX_WAVE_HOSTS, InvalidOperation, OperationKind, OperationRequest
from forewarn.fleet import Topology
from forewarn.rehearsal.grading import ReactionReport

__all__ = [
    "DESCRIPTION_MAX",
    "NAME_MAX",
    "ActionBody",
    "AdvanceBody",
    "ClockOut",
    "ErrorOut",
    "EventOut",
    "OperationBody",
    "OperationOut",
    "ScenarioRunBody",
    "VmDetailOut",
    "VmOut",
]


#: Characters of a name (VM, host, scope, scenario, operation kind) in a request body.
NAME_MAX = 256
#: Characters of an operation's description (VMs read it in their documents).
DESCRIPTION_MAX = 1000

Name = Annotated[str, msgspec.Meta(max_length=NAME_MAX)]


class OperationBody(msgspec.Struct, forbid_unknown_fields=True):
    """Create an operation. Name the target with exactly one of ``vms``, ``host``,
    ``scope``, ``target`` (a VM, host or scope name, resolved in that order), or
    ``region: true`` (the whole fleet: a rolling kind walks every update domain, host by
    host, in waves of ``wave_hosts`` hosts, default 100)."""

    # A plain str, so that an unknown kind gets the fabric's message naming the known ones.
    kind: Annotated[
        str,
        msgspec.Meta(
            max_length=NAME_MAX, extra_json_schema={"enum": [k.value for k in OperationKind]}
        ),
    ]
    vms: list[Name] | None = None
    host: Name | None = None
    scope: Name | None = None
    target: Name | None = None
    notice_seconds: float | None = None
    description: Annotated[str, msgspec.Meta(max_length=DESCRIPTION_MAX)] | None = None
    duration_seconds: int | None = None
    region: bool | None = None
    wave_hosts: Annotated[int, msgspec.Meta(ge=1, le=MAX_WAVE_HOSTS)] | None = None


def operation_request(body: OperationBody, topology: Topology) -> OperationRequest:
    """The request ``body`` asks for, its ``target`` resolved (``InvalidOperation``: a
    400 naming what is wrong; the fabric checks the rest)."""
    vms, host, scope = tuple(body.vms or ()), body.host, body.scope
    if body.region is False:
        raise InvalidOperation("region takes true (the whole fleet); leave it out otherwise")
    if body.target is not None:
        if body.region:
            raise InvalidOperation("give either target or region, not both")
        if body.vms is not None or host is not None or scope is not None:
            raise InvalidOperation("give either target or vms/host/scope, not both")
        what, name = topology.classify(body.target)
        vms, host, scope = (
            ((name,) if what == "vm" else ()),
            (name if what == "host" else None),
            (name if what == "scope" else None),
        )
    return OperationRequest(
        kind=body.kind, vms=vms, host=host, scope=scope, notice_seconds=body.notice_seconds,
        description=body.description, duration_seconds=body.duration_seconds,
        region=bool(body.region), wave_hosts=body.wave_hosts,
    )  # fmt: skip


class AdvanceBody(msgspec.Struct, forbid_unknown_fields=True):
    """Advance a virtual clock."""

    seconds: Annotated[float, msgspec.Meta(extra_json_schema={"minimum": 0})]


class ActionBody(msgspec.Struct, forbid_unknown_fields=True):
    """An event action takes no options: ``{}`` (an empty body is accepted too)."""


class ScenarioRunBody(msgspec.Struct, forbid_unknown_fields=True):
    """Play a named scenario (``forewarn scenario list`` names them)."""

    name: Name


class ErrorOut(msgspec.Struct):
    """Every error answer."""

    error: str


class EventOut(msgspec.Struct):
    """A live event with what the platform knows about it."""

    id: str
    operation_id: str
    scope: str
    type: str
    source: str
    status: str
    resources: list[str]
    description: str
    duration_seconds: int
    created_at: float
    not_before: float | None
    approved_by: str | None
    started_at: float | None
    #: Where the approval came from: endpoint, arm, control, or policy (None: not yet).
    approved_via: str | None = None


class OperationOut(msgspec.Struct):
    """An operation and its events."""

    id: str
    kind: str
    target: str
    vms: list[str]
    state: str
    created_at: float
    not_before: float
    started_at: float | None
    ended_at: float | None
    remove_at: float | None
    event_ids: list[str]
    unnotified: list[str]
    rollout_id: str | None
    #: Where the operation was asked for: control (API, CLI, dashboard), arm.
    via: str = "control"


class VmOut(msgspec.Struct):
    """A VM, where it runs and what is happening to it."""

    name: str
    scope: str
    host: str
    zone: str
    update_domain: int
    fault_domain: int
    address: str
    port: int | None
    spot: bool
    vm_id: str
    status: str
    #: What its OS calls itself (``/metadata/instance``'s ``osProfile.computerName``).
    computer_name: str = ""


class VmDetailOut(VmOut, kw_only=True):
    """One VM (``GET /api/v1/vms/{name}``): its row and its scope's kind, all a program
    run as that VM needs to know of the fleet (``forewarn exec``), without the topology."""

    #: ``scale_set``, ``availability_set``, ``standalone`` or ``cloud_service`` (no VNet).
    scope_kind: str


class ClockOut(msgspec.Struct):
    """The platform clock."""

    now: float
    iso: str
    virtual: bool
    time_scale: float
    next_due: float | None


#: The one-target rule of ``OperationBody`` (the server answers 400 otherwise).
_NAME = {"type": "string", "maxLength": NAME_MAX}
_TARGETS = {
    "target": _NAME,
    "vms": {"type": "array", "items": _NAME, "minItems": 1, "uniqueItems": True},
    "host": _NAME,
    "scope": _NAME,
    "region": {"const": True},
}


def schema_components() -> dict[str, Any]:
    """JSON Schemas of every body, for the OpenAPI document."""
    _, components = msgspec.json.schema_components(
        [
            *(OperationBody, AdvanceBody, ActionBody, ErrorOut, EventOut, OperationOut),
            *(VmOut, VmDetailOut, ClockOut, ReactionReport, ScenarioRunBody),
            *DRILL_SCHEMAS,  # reset and endpoint faults
            *ROLLOUT_SCHEMAS,
        ],
        ref_template="#/components/schemas/{name}",
    )
    fault_body_rules(components["FaultBody"])
    # Exactly one target: the one named, every other one absent or null.
    components["OperationBody"]["oneOf"] = [
        {
            "required": [name],
            "properties": {
                name: schema,
                **{other: {"type": "null"} for other in _TARGETS if other != name},
            },
        }
        for name, schema in _TARGETS.items()
    ]
    return components
