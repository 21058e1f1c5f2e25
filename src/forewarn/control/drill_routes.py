"""Routes for repeatable drills: reset the fleet, inject endpoint faults.

``POST /api/v1/fleet/reset`` starts the next drill from a fresh fleet (``Fabric.reset``).
``/api/v1/faults`` creates (POST), lists (GET) and clears (DELETE) the endpoint's
injected faults (``imds/faults.py``); ``DELETE /api/v1/faults/{id}`` clears one. They
follow the API's rules (JSON bodies, token, Host and Origin checks: ``app.py``), and a
body that is not right gets a 400 saying why, with nothing changed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal, TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from forewarn.control.duration_text import MAX_SECONDS, NONZERO, ZERO_ALLOWED, duration_text
from forewarn.fabric import Conflict, Fabric, InvalidOperation, NotFoundError
from forewarn.imds.faults import FAULT_STATUSES, MAX_FAULTS, Fault, FaultBook, FaultKind

__all__ = [
    "DrillRoutes",
    "EmptyBody",
    "FaultBody",
    "FaultOut",
    "ResetBody",
    "ResetOut",
    "drill_paths",
    "fault_body_rules",
]

T = TypeVar("T")
BodyReader = Callable[[Request, type[Any]], Awaitable[Any]]

#: The longest window, and the latest start, a fault may be given (platform seconds: as
#: long as a duration given as text can be, ``duration_text.py``).
MAX_WINDOW = MAX_SECONDS
MAX_LATENCY = 300.0
MAX_RATE = 1000.0

#: A duration as a number of seconds or as text (``90s``, ``5m``, ``PT5M``: the one syntax
#: of ``forewarn.contract.durations``, digits bounded: ``duration_text.py``), platform time.
#: The pattern is checked by ``_platform_seconds`` (whose error says what a duration is,
#: where msgspec's would print the regular expression).
Seconds = (
    Annotated[float, msgspec.Meta(ge=0, le=MAX_WINDOW)]
    | Annotated[str, msgspec.Meta(max_length=64, extra_json_schema={"pattern": ZERO_ALLOWED})]
)
Window = (
    Annotated[float, msgspec.Meta(gt=0, le=MAX_WINDOW)]
    | Annotated[str, msgspec.Meta(max_length=64, extra_json_schema={"pattern": NONZERO})]
)
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]


class ResetBody(msgspec.Struct, forbid_unknown_fields=True):
    """A reset takes no options: ``{}`` (an empty body is accepted too)."""


class EmptyBody(msgspec.Struct, forbid_unknown_fields=True):
    """Clearing faults takes no options: ``{}`` (an empty body is accepted too)."""


class ResetOut(msgspec.Struct, kw_only=True):
    """What a reset dropped, and each scope's new incarnation."""

    at: float
    events: int
    operations: int
    live_operations: int
    rollouts: int
    restored_vms: list[str]
    incarnations: dict[str, int]


class FaultBody(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Inject an endpoint fault: on ``vm``, on ``scope``, or (neither) on the whole fleet;
    from ``after_seconds`` for ``duration_seconds`` of platform time (divided by the
    server's time scale, like every platform duration; none: until cleared), each a number
    of seconds or a duration (``90s``, ``5m``, ``PT5M``); on a ``share`` of the requests.
    ``status`` (410, 429, 500 or 503) is for ``status`` faults, ``latency_seconds`` (real)
    for ``latency``, ``rate`` (requests/s the co-tenant makes, out of the VM's 5) for
    ``cotenant``."""

    kind: Literal["status", "latency", "timeout", "reset", "cotenant"]
    vm: Name | None = None
    scope: Name | None = None
    status: Literal[410, 429, 500, 503] | None = None
    after_seconds: Seconds = 0.0
    duration_seconds: Window | None = None
    share: Annotated[float, msgspec.Meta(gt=0, le=1)] = 1.0
    latency_seconds: Annotated[float, msgspec.Meta(gt=0, le=MAX_LATENCY)] | None = None
    rate: Annotated[float, msgspec.Meta(gt=0, le=MAX_RATE)] | None = None


class FaultOut(msgspec.Struct, kw_only=True):
    """An injected fault, with how many requests it hit so far. ``starts_at`` and
    ``ends_at`` are instants of the server's clock; ``duration_seconds`` is the window
    as given, in platform time (``ends_at - starts_at`` times the time scale)."""

    id: str
    kind: str
    vm: str | None
    scope: str | None
    status: int | None
    starts_at: float
    ends_at: float | None
    share: float
    latency_seconds: float | None
    rate: float | None
    hits: int
    duration_seconds: float | None = None


def _fault_out(fault: Fault, scale: float) -> FaultOut:
    kind = fault.kind
    window = None if fault.ends is None else (fault.ends - fault.starts) * scale
    return FaultOut(
        id=fault.id, kind=kind.value, vm=fault.vm, scope=fault.scope, status=fault.status,
        starts_at=fault.starts, ends_at=fault.ends, duration_seconds=window, share=fault.share,
        latency_seconds=fault.latency if kind is FaultKind.LATENCY else None,
        rate=fault.rate if kind is FaultKind.COTENANT else None, hits=fault.hits,
    )  # fmt: skip


def _json(data: Any, status: int = 200) -> Response:
    return Response(msgspec.json.encode(data), status, media_type="application/json")


def _platform_seconds(value: float | str, name: str, pattern: str) -> float:
    """Seconds of platform time in ``value`` (InvalidOperation, 400, naming ``name``)."""
    if not isinstance(value, str):
        return float(value)  # bounded by the schema
    try:
        return duration_text(value, pattern, name)
    except ValueError as exc:
        raise InvalidOperation(str(exc)) from None


def _check(body: FaultBody) -> None:
    """The rules a schema cannot say alone; InvalidOperation (400) names the one broken."""
    if body.vm is not None and body.scope is not None:
        raise InvalidOperation("give vm or scope (or neither, for the whole fleet), not both")
    needs = {"status": "status", "latency": "latency_seconds", "cotenant": "rate"}
    for kind, name in needs.items():
        given = getattr(body, name) is not None
        if given and body.kind != kind:
            raise InvalidOperation(f"{name} is only for {kind} faults, not {body.kind}")
        if not given and body.kind == kind:
            raise InvalidOperation(f"a {kind} fault needs {name}")
    if body.kind == "cotenant" and body.share != 1.0:
        raise InvalidOperation("a co-tenant polls all the time: share is not for cotenant")


class DrillRoutes:
    """Handlers of the reset and fault routes over one fabric and its endpoint's faults."""

    def __init__(self, fabric: Fabric, faults: FaultBook, read_body: BodyReader) -> None:
        self.fabric = fabric
        self.faults = faults
        self._read_body = read_body

    async def _no_options(self, request: Request, kind: type[Any] = EmptyBody) -> None:
        if (await request.body()).strip():
            await self._read_body(request, kind)  # ``{}``: anything else is a 400

    async def reset(self, request: Request) -> Response:
        await self._no_options(request, ResetBody)
        fabric = self.fabric
        detail = fabric.reset()
        await fabric.durable()  # answered once written: a restart shows the reset fleet
        incarnations = {sid: fabric.view(sid).incarnation for sid in fabric.topology.scopes}
        return _json(
            ResetOut(
                at=fabric.clock.now(),
                events=int(detail["events"]),
                operations=int(detail["operations"]),
                live_operations=int(detail["live_operations"]),
                rollouts=int(detail["rollouts"]),
                restored_vms=list(detail["restored_vms"]),
                incarnations=incarnations,
            )
        )

    def _out(self, faults: list[Fault]) -> Response:
        scale = self.fabric.config.time_scale
        return _json([_fault_out(f, scale) for f in faults])

    async def list_faults(self, request: Request) -> Response:
        return self._out(self.faults.faults())

    async def add_fault(self, request: Request) -> Response:
        body: FaultBody = await self._read_body(request, FaultBody)
        _check(body)
        after = _platform_seconds(body.after_seconds, "after_seconds", ZERO_ALLOWED)
        lasts = body.duration_seconds
        duration = None if lasts is None else _platform_seconds(lasts, "duration_seconds", NONZERO)
        topology = self.fabric.topology
        vm = None if body.vm is None else topology.vm(body.vm).name  # unknown: 404
        if body.scope is not None and body.scope not in topology.scopes:
            raise NotFoundError(f"no scope named {body.scope!r}")
        scaled = self.fabric.config.scaled  # platform time, in the server's clock
        try:
            fault = self.faults.add(
                FaultKind(body.kind), vm=vm, scope=body.scope, status=body.status,
                after=scaled(after), duration=None if duration is None else scaled(duration),
                share=body.share, latency=body.latency_seconds or 0.0, rate=body.rate or 0.0,
            )  # fmt: skip
        except ValueError as exc:  # too many faults at once: clear some, then retry
            raise Conflict(str(exc)) from None
        return _json(_fault_out(fault, self.fabric.config.time_scale), 201)

    async def clear_faults(self, request: Request) -> Response:
        await self._no_options(request)
        return self._out(self.faults.clear())

    async def clear_fault(self, request: Request) -> Response:
        await self._no_options(request)
        fault_id = request.path_params["fault_id"]
        fault = self.faults.remove(fault_id)
        if fault is None:
            shown = fault_id if len(fault_id) <= 64 else fault_id[:64] + "..."
            raise NotFoundError(f"no fault with id {shown!r} (it may have ended)")
        return _json(_fault_out(fault, self.fabric.config.time_scale))


_FAULT_ID = {"name": "fault_id", "in": "path", "required": True, "schema": {"type": "string"}}


def drill_paths(op: Callable[..., dict[str, Any]], ref: Callable[[str], dict[str, Any]],
                json: Callable[..., dict[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """The OpenAPI paths of these routes (``openapi.py``'s helpers passed in)."""
    faults = {"type": "array", "items": ref("FaultOut")}
    not_json = {"415": json(ref("ErrorOut"), "Not sent as application/json")}
    return {
        "/api/v1/fleet/reset": {
            "post": op(
                "Reset the fleet: events, operations and rollouts gone, deleted VMs back, "
                "history kept (a fleet.reset entry), every scope's incarnation one higher",
                {"200": json(ref("ResetOut"))},
                body="ResetBody",
            )
        },
        "/api/v1/faults": {
            "get": op("Injected endpoint faults not over yet", {"200": json(faults)}),
            "post": op(
                f"Inject an endpoint fault (at most {MAX_FAULTS} at once, else 409); statuses "
                + ", ".join(str(s) for s in FAULT_STATUSES),
                {"201": json(ref("FaultOut"))},
                body="FaultBody",
            ),
            "delete": op(
                "Clear every injected fault", {"200": json(faults), **not_json}, body="EmptyBody"
            ),
        },
        "/api/v1/faults/{fault_id}": {
            "delete": op(
                "Clear one injected fault",
                {"200": json(ref("FaultOut")), **not_json},
                body="EmptyBody",
                params=[_FAULT_ID],
            )
        },
    }


SCHEMAS = (ResetBody, EmptyBody, ResetOut, FaultBody, FaultOut)

#: What each kind needs: (the field it needs, the fields only other kinds take).
_NEEDS = {"status": "status", "latency": "latency_seconds", "cotenant": "rate"}


def fault_body_rules(schema: dict[str, Any]) -> None:
    """The rules of ``_check`` in the JSON Schema of ``FaultBody``: exactly what the
    server accepts (one ``oneOf`` branch per kind; vm and scope never both)."""
    branches = []
    for kind in ("status", "latency", "timeout", "reset", "cotenant"):
        properties: dict[str, Any] = {"kind": {"const": kind}}
        required = ["kind"]
        for other_kind, name in _NEEDS.items():
            if other_kind == kind:
                required.append(name)
                properties[name] = {"not": {"type": "null"}}
            else:
                properties[name] = {"type": "null"}
        if kind == "cotenant":
            properties["share"] = {"const": 1}
        branches.append({"required": required, "properties": properties})
    schema["oneOf"] = branches
    schema["not"] = {
        "required": ["vm", "scope"],
        "properties": {"vm": {"type": "string"}, "scope": {"type": "string"}},
    }
