"""The control-plane HTTP API (JSON, OpenAPI), on its own listener.

Handlers are thin: parse, call one fabric method, serialise. Fabric errors map to
status codes in one place (``_ERROR_STATUS``); nothing changes when a request fails.
Every answer, errors of routing and crashes included, is JSON (``{"error": ...}``).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from typing import Any, TypeVar

import msgspec
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from forewarn import __version__
from forewarn.contract import SUPPORTED_VERSIONS, lookup_version
from forewarn.control.body_limit import BodyLimit
from forewarn.control.compression import Compression
from forewarn.control.dashboard import DashboardRoutes, ScenarioHook, is_public, wants_page
from forewarn.control.drill_routes import DrillRoutes
from forewarn.control.json_views import (
    crash,
    ended_out,
    event_out,
    http_error,
    hung_up,
    json_error,
    not_utf8,
    operation_out,
    shorten,
)
from forewarn.control.openapi import openapi_document, with_schemas
from forewarn.control.raw_paths import RawPaths
from forewarn.control.rehearsal_routes import ReactionRoutes
from forewarn.control.rollout_routes import RolloutRoutes
from forewarn.control.schemas import (
    ActionBody,
    AdvanceBody,
    ClockOut,
    OperationBody,
    VmDetailOut,
    VmOut,
    operation_request,
)
from forewarn.control.security import AccessGuard, HostPolicy
from forewarn.control.topology_stream import topology_pieces
from forewarn.eventgrid import EventGrid
from forewarn.eventgrid.routes import EventGridRoutes
from forewarn.fabric import (
    CATALOGUE,
    ClockError,
    Conflict,
    Fabric,
    FabricError,
    InvalidOperation,
    InvalidTransition,
    NotFoundError,
    StoreUnavailable,
)
from forewarn.fleet import UnknownName
from forewarn.imds import DocumentCache
from forewarn.imds.faults import FaultBook
from forewarn.rehearsal import ReactionTracker
from forewarn.rehearsal.verdict_memo import VerdictMetrics

__all__ = ["ControlApp"]

T = TypeVar("T")
Handler = Callable[[Request], Awaitable[Response]]

MAX_HISTORY = 10_000
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

_ERROR_STATUS: tuple[tuple[type[Exception], int], ...] = (
    (StoreUnavailable, 503),
    (NotFoundError, 404),
    (UnknownName, 404),
    (InvalidTransition, 409),
    (Conflict, 409),
    (ClockError, 409),
    (InvalidOperation, 400),
    (FabricError, 400),
)


class _BadRequest(Exception):
    """A body or parameter the API cannot accept."""


class _NotJson(Exception):
    """A state-changing request that is not declared JSON (what a cross-site form sends)."""


def _json(data: Any, status: int = 200) -> Response:
    return Response(msgspec.json.encode(data), status, media_type="application/json")


def _guard(handler: Handler) -> Handler:
    """Turn fabric and body errors into clear 4xx answers."""

    async def wrapped(request: Request) -> Response:
        try:
            if request.method not in SAFE_METHODS:
                _require_json(request)
            return await handler(request)
        except _NotJson as exc:
            return json_error(str(exc), 415)
        except _BadRequest as exc:
            return json_error(str(exc), 400)
        except (FabricError, UnknownName) as exc:
            status = next(code for kind, code in _ERROR_STATUS if isinstance(exc, kind))
            return json_error(str(exc), status)

    return wrapped


def _require_json(request: Request) -> None:
    """Browsers send text/plain and form bodies cross-site without asking; never JSON."""
    given = request.headers.get("content-type")
    if given is None or given.partition(";")[0].strip().lower() != "application/json":
        raise _NotJson(
            "state-changing requests must be sent with Content-Type: application/json"
            + (f" (got {given!r})" if given is not None else " (none given)")
        )


async def _body(request: Request, kind: type[T]) -> T:
    raw = await request.body()
    if not raw.strip():
        raise _BadRequest("request body is empty; expected a JSON object")
    return _decode(raw, kind)


def _decode(raw: bytes, kind: type[T]) -> T:
    """Any malformed body is the client's mistake: 400, never a crash."""
    try:
        return msgspec.json.decode(raw, type=kind)
    except msgspec.ValidationError as exc:
        raise _BadRequest(f"invalid body: {exc}") from None
    except msgspec.DecodeError:
        detail = ": it is not valid UTF-8" if not_utf8(raw) else ""
        raise _BadRequest(f"request body is not valid JSON{detail}") from None
    except RecursionError:
        raise _BadRequest("request body is not valid JSON: nested too deeply") from None


def _int_param(request: Request, name: str, default: int) -> int:
    value = request.query_params.get(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise _BadRequest(f"query parameter {name} must be an integer") from None
    if not 0 <= number < 2**63:
        raise _BadRequest(f"query parameter {name} is out of range")
    return number


def _query_names(doc: dict[str, Any], path: str, method: str) -> frozenset[str] | None:
    """The query parameters the OpenAPI document gives ``method`` on ``path`` (None: the
    path is not in it, e.g. the dashboard's files)."""
    operation = doc["paths"].get(path, {}).get(method)
    if operation is None:
        return None
    params = operation.get("parameters", [])
    return frozenset(p["name"] for p in params if p.get("in") == "query")


def _only_documented_query(handler: Handler, names: frozenset[str] | None) -> Handler:
    """A misspelt query parameter (``?limt=5``) is a 400 naming it, never silently ignored."""
    if names is None:
        return handler

    async def checked(request: Request) -> Response:
        unknown = [name for name in request.query_params if name not in names]
        if unknown:
            takes = ", ".join(sorted(names)) or "no query parameters"
            raise _BadRequest(f"unknown query parameter {shorten(unknown[0], 100)!r} "
                              f"(this route takes: {takes})")  # fmt: skip
        return await handler(request)

    return checked


def _route(doc: dict[str, Any], path: str, *, tail: str | None = None,
           **handlers: Handler) -> Route:  # fmt: skip
    """One route per path, so that a 405 names every method the path serves; query
    parameters are the ones ``doc`` (the OpenAPI document) gives each method; ``tail``:
    the path parameter that takes the rest of the path, ``/`` included (a scope id such
    as ``big/pg3``)."""
    by_method = {
        method.upper(): _guard(_only_documented_query(handler, _query_names(doc, path, method)))
        for method, handler in handlers.items()
    }

    async def endpoint(request: Request) -> Response:
        method = "GET" if request.method == "HEAD" else request.method
        return await by_method[method](request)

    matched = path if tail is None else path.replace(f"{{{tail}}}", f"{{{tail}:path}}")
    return Route(matched, endpoint, methods=list(by_method))


class ControlApp:
    """Routes of the control API over one fabric; ``asgi`` is the app to serve.

    ``hosts`` are extra names (``--control-host``) the API answers to besides its own
    address; ``token``, when set, is required as ``Authorization: Bearer``. ``middleware``
    runs inside the access guard (a scaled-out fleet forwards changes to its leader).
    ``reactions`` is the tracker the endpoint records into: with it the app serves the
    rehearsal report (``/api/v1/reactions``, ``/api/v1/report``), without it not.
    ``faults`` are the endpoint's injected faults (``/api/v1/faults``).
    """

    def __init__(
        self,
        fabric: Fabric,
        *,
        registry: CollectorRegistry | None = None,
        token: str | None = None,
        hosts: Iterable[str] = (),
        middleware: Iterable[Middleware] = (),
        scenarios: ScenarioHook | None = None,
        reactions: ReactionTracker | None = None,
        faults: FaultBook | None = None,
        eventgrid: EventGrid | None = None,
    ) -> None:
        self.fabric = fabric
        # the page at / and its stream
        self.dashboard = DashboardRoutes(fabric, scenarios, reactions)
        self.registry = registry or CollectorRegistry()
        report = reactions is not None
        # the paths (what the routes take their query parameters from) now; the bodies'
        # schemas when the document is first asked for, not on every start
        doc = openapi_document(
            __version__, token=bool(token), report=report, eventgrid=eventgrid is not None,
            schemas=False,
        )  # fmt: skip
        self._paths_only = doc
        self._openapi: bytes | None = None
        self._documents = DocumentCache()  # the endpoint's rendering, not a second copy

        def r(path: str, *, tail: str | None = None, **handlers: Handler) -> Route:
            return _route(doc, path, tail=tail, **handlers)

        rollouts = RolloutRoutes(fabric)
        routes = [
            r("/", get=self.index),
            r("/healthz", get=self.health),
            r("/openapi.json", get=self.openapi),
            r("/metrics", get=self.metrics),
            r("/api/v1/topology", get=self.topology),
            r("/api/v1/vms", get=self.vms),
            r("/api/v1/vms/{name}", get=self.vm),
            r("/api/v1/catalogue", get=self.catalogue),
            r("/api/v1/events", get=self.list_events),
            r("/api/v1/events/{event_id}", get=self.get_event),
            r("/api/v1/events/{event_id}/{action}", post=self.event_action),
            r("/api/v1/operations", get=self.list_operations, post=self.create_operation),
            r("/api/v1/operations/{operation_id}", get=self.get_operation),
            r("/api/v1/rollouts", get=rollouts.list_rollouts),
            r("/api/v1/rollouts/{rollout_id}", get=rollouts.get_rollout),
            r("/api/v1/documents/{vm}", get=self.document),
            r("/api/v1/clock", get=self.clock),
            r("/api/v1/clock/advance", post=self.advance),
            r("/api/v1/history", get=self.history),
            r("/api/v1/dashboard", get=self.dashboard.state),
            r("/api/v1/dashboard/scopes", get=self.dashboard.kind_scopes),
            r("/api/v1/dashboard/scopes/{scope}", tail="scope", get=self.dashboard.scope_vms),
            r("/api/v1/dashboard/vms", get=self.dashboard.search_vms),
            r("/api/v1/dashboard/targets", get=self.dashboard.targets),
            r("/api/v1/stream", get=self.dashboard.stream),
            r("/api/v1/scenarios", get=self.dashboard.scenarios_list),
            r("/api/v1/scenarios/runs", post=self.dashboard.scenario_run),
            r("/dashboard/{name}", get=self.dashboard.static),
        ]
        # Repeatable drills: reset the fleet; the endpoint's injected faults (when given).
        drills = DrillRoutes(fabric, faults or FaultBook(fabric.clock), _body)
        routes += [
            r("/api/v1/fleet/reset", post=drills.reset),
            r("/api/v1/faults", get=drills.list_faults, post=drills.add_fault,
              delete=drills.clear_faults),
            r("/api/v1/faults/{fault_id}", delete=drills.clear_fault),
        ]  # fmt: skip
        self.reactions = None if reactions is None else ReactionRoutes(fabric, reactions)
        if self.reactions is not None:  # the rehearsal report, and how often it was graded
            VerdictMetrics(self.registry, self.reactions.tracker.verdicts)
            routes.append(r("/api/v1/reactions", get=self.reactions.reactions))
            routes.append(r("/api/v1/report", get=self.reactions.report))
        if eventgrid is not None:  # Event Grid subscriptions and their deliveries
            grid = EventGridRoutes(eventgrid)
            routes += [
                r("/api/v1/eventgrid/subscriptions", get=grid.list_subscriptions,
                  post=grid.create_subscription),
                r("/api/v1/eventgrid/subscriptions/{name}", get=grid.get_subscription,
                  delete=grid.delete_subscription),
                r("/api/v1/eventgrid/deliveries", get=grid.deliveries),
                r("/api/v1/eventgrid/validate/{name}", get=grid.validate),
            ]  # fmt: skip
        guard = Middleware(AccessGuard, hosts=HostPolicy(hosts), token=token, public=is_public)
        self.asgi = Starlette(
            routes=routes,
            middleware=[
                Middleware(Compression),
                Middleware(BodyLimit),
                guard,
                Middleware(RawPaths),
                *middleware,
            ],
            exception_handlers={
                HTTPException: http_error,
                ClientDisconnect: hung_up,
                Exception: crash,
            },
        )

    def close(self) -> None:
        """End the dashboards' live streams (the server is stopping)."""
        self.dashboard.close()

    async def index(self, request: Request) -> Response:
        """The dashboard for a browser (it asks for HTML), the JSON index otherwise."""
        if wants_page(request.headers.get("accept")):
            response = await self.dashboard.page(request)
        else:
            response = _json({
                "name": "forewarn control API",
                "version": __version__,
                "api": "/api/v1",
                "openapi": "/openapi.json",
                "health": "/healthz",
                "metrics": "/metrics",
                "dashboard": "/ (Accept: text/html)",
            })  # fmt: skip
        response.headers["Vary"] = "Accept"
        return response

    async def health(self, request: Request) -> Response:
        error = self.fabric.store_error()
        if error is not None:
            reason = f"the database refuses writes: {error}"
            return _json({"status": "unhealthy", "version": __version__, "reason": reason}, 503)
        return _json({"status": "ok", "version": __version__})

    async def openapi(self, request: Request) -> Response:
        if self._openapi is None:
            self._openapi = msgspec.json.encode(with_schemas(self._paths_only))
        return Response(self._openapi, media_type="application/json")

    async def metrics(self, request: Request) -> Response:
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)

    def _vm_out(self, name: str, statuses: dict[str, str] | None = None) -> VmOut:
        """A VM's row; ``statuses``: every VM not running (``Fabric.vm_statuses``, one
        pass for a whole listing; else this VM's own look-up)."""
        vm = self.fabric.topology.vms[name]
        status = self.fabric.vm_status(name) if statuses is None else statuses.get(name, "running")
        return VmOut(
            name=vm.name, scope=vm.scope_id, host=vm.host, zone=vm.zone,
            update_domain=vm.update_domain, fault_domain=vm.fault_domain, address=vm.address,
            port=vm.port, spot=vm.spot, vm_id=vm.vm_id, status=status,
            computer_name=self.fabric.topology.azure.computer_name(vm.name),
        )  # fmt: skip

    async def vms(self, request: Request) -> Response:
        statuses = self.fabric.vm_statuses()
        return _json([self._vm_out(n, statuses) for n in self.fabric.topology.vms])

    async def vm(self, request: Request) -> Response:
        """One VM, looked up in the fleet's table (a million VMs cost what ten do)."""
        name = request.path_params["name"]
        try:
            found = self.fabric.topology.vm(name)
        except UnknownName:
            raise UnknownName(f"no VM named {shorten(name, 100)!r} ({self._some_vms()})") from None
        row = self._vm_out(found.name)
        kind = self.fabric.topology.scopes[found.scope_id].kind.value
        return _json(VmDetailOut(**msgspec.structs.asdict(row), scope_kind=kind))

    def _some_vms(self) -> str:
        """The fleet's first VMs, for an error that should say what there is."""
        vms = self.fabric.topology.vms
        names = list(itertools.islice(vms, 8))
        more = len(vms) - len(names)
        return "its VMs: " + ", ".join(names) + (f" and {more} more" if more > 0 else "")

    async def topology(self, request: Request) -> Response:
        """Every scope and VM, streamed (``topology_stream``: a million VMs never built
        as one document, nor on the loop for more than a batch at a time)."""
        statuses = self.fabric.vm_statuses()
        pieces = topology_pieces(self.fabric, lambda name: self._vm_out(name, statuses))
        return StreamingResponse(pieces, media_type="application/json")

    async def catalogue(self, request: Request) -> Response:
        scale = self.fabric.config.scaled
        return _json([
            {"kind": s.kind.value, "event_type": s.event_type.value, "source": s.source.value,
             "notice_seconds": scale(s.notice), "description": s.description,
             "created_started": s.created_started, "deletes_vm": s.deletes_vm}
            for s in CATALOGUE.values()
        ])  # fmt: skip

    async def list_events(self, request: Request) -> Response:
        scope = request.query_params.get("scope")
        vm = request.query_params.get("vm")
        events = self.fabric.events()
        if scope is not None:
            self.fabric.view(scope)
            events = [e for e in events if e.scope_id == scope]
        if vm is not None:
            found = self.fabric.topology.vm(vm)
            visible = {e.event_id for e in self.fabric.view(found.scope_id).events_for(found.name)}
            events = [e for e in events if e.id in visible]
        return _json([event_out(e) for e in events])

    async def get_event(self, request: Request) -> Response:
        return _json(event_out(self.fabric.event(request.path_params["event_id"])))

    async def event_action(self, request: Request) -> Response:
        raw = await request.body()
        if raw.strip():
            _decode(raw, ActionBody)  # no options yet: empty, or an empty object
        event_id = request.path_params["event_id"]
        action = request.path_params["action"]
        fabric = self.fabric
        if action == "approve":
            fabric.approve_event(event_id)
        elif action == "start":
            fabric.start_event(event_id)
        elif action == "cancel":
            canceled = fabric.cancel_event(event_id)
            await fabric.durable()
            return _json(ended_out(canceled, "Canceled"))
        elif action == "complete":
            completed = fabric.complete_event(event_id)
            await fabric.durable()
            return _json(ended_out(completed, "Completed"))
        else:
            return json_error(
                f"unknown action {action!r}; use approve, start, cancel or complete", 404
            )
        await fabric.durable()  # answered once written: what we say happened, happened
        return _json(event_out(fabric.event(event_id)))

    async def list_operations(self, request: Request) -> Response:
        return _json([operation_out(op) for op in self.fabric.operations()])

    async def get_operation(self, request: Request) -> Response:
        return _json(operation_out(self.fabric.operation(request.path_params["operation_id"])))

    async def create_operation(self, request: Request) -> Response:
        body = await _body(request, OperationBody)
        if body.region:  # one pass over the fleet, once: off the event loop
            await asyncio.to_thread(self.fabric.topology.update_domain_walk)
        op = self.fabric.submit(operation_request(body, self.fabric.topology))
        await self.fabric.durable()
        return _json(operation_out(op), 201)

    async def document(self, request: Request) -> Response:
        vm = self.fabric.topology.vm(request.path_params["vm"])
        if self.fabric.is_deleted(vm.name):
            raise NotFoundError(f"VM {vm.name!r} has been deleted")
        name = request.query_params.get("api-version", SUPPORTED_VERSIONS[-1])
        version = lookup_version(name)
        if version is None:
            raise _BadRequest(
                f"unknown api-version {name!r}; known: {', '.join(SUPPORTED_VERSIONS)}"
            )
        reply = self._documents.reply(self.fabric.view(vm.scope_id), vm, version)
        return Response(reply.body, media_type="application/json")

    def _clock_out(self) -> ClockOut:
        now = self.fabric.clock.now()
        return ClockOut(
            now=now,
            iso=datetime.fromtimestamp(now, tz=UTC).isoformat(),
            virtual=self.fabric.clock.is_virtual,
            time_scale=self.fabric.config.time_scale,
            next_due=self.fabric.next_due(),
        )

    async def clock(self, request: Request) -> Response:
        return _json(self._clock_out())

    async def advance(self, request: Request) -> Response:
        body = await _body(request, AdvanceBody)
        await self.fabric.advance_durably(body.seconds)
        return _json(self._clock_out())

    async def history(self, request: Request) -> Response:
        newest = "last" in request.query_params
        limits = {name: _int_param(request, name, 1000) for name in ("limit", "last")}
        for name, number in limits.items():
            if number > MAX_HISTORY:
                raise _BadRequest(f"{name} must be 0 to {MAX_HISTORY}")
        limit = limits["last" if newest else "limit"]
        entries = await run_in_threadpool(  # a disk read: never on the event loop
            self.fabric.history,
            after=_int_param(request, "after", 0),
            limit=limit,
            event_id=request.query_params.get("event_id"),
            operation_id=request.query_params.get("operation_id"),
            newest=newest,
        )
        return _json(entries)
