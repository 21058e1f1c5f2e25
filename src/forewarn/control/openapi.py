"""The OpenAPI document of the control API, built from the body schemas."""

from __future__ import annotations

from typing import Any

from forewarn.contract import SUPPORTED_VERSIONS
from forewarn.control.drill_routes import drill_paths
from forewarn.control.rollout_routes import rollout_paths
from forewarn.control.schemas import schema_components

__all__ = ["openapi_document"]


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_ERR = {"4XX": _json(_ref("ErrorOut"), "Invalid request; nothing changed")}


def _op(
    summary: str,
    ok: dict[str, Any],
    body: str | None = None,
    params: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"summary": summary, "responses": {**ok, **_ERR}}
    if body:
        out["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _ref(body)}},
        }
    if params:
        out["parameters"] = params
    return out


def _path_param(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def _query(
    name: str, kind: str = "string", description: str | None = None, **schema: Any
) -> dict[str, Any]:
    out = {"name": name, "in": "query", "required": False, "schema": {"type": kind, **schema}}
    if description:
        out["description"] = description
    return out


_HISTORY_PARAMS = [
    _query("after", "integer", "Entries after this sequence number", minimum=0, maximum=2**63 - 1),
    _query("limit", "integer", "At most this many entries, oldest first", minimum=0,
           maximum=10_000, default=1000),
    _query("last", "integer", "The newest N entries, oldest first (overrides limit)",
           minimum=0, maximum=10_000),
    _query("event_id"),
    _query("operation_id"),
]  # fmt: skip


def _text(description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"text/plain": {"schema": {"type": "string"}}}}


_UNAVAILABLE = "Unavailable for now (the store, or a scaled-out fleet's leader); retry"


#: Paths that need no token: probes, and the dashboard's page files (``/`` asked for as
#: HTML needs none either; as JSON it does).
_PUBLIC = frozenset({"/healthz", "/dashboard/{name}"})


def _content(*types: str) -> dict[str, Any]:
    return {
        "description": "OK",
        "content": {t: {"schema": {"type": "string"}} for t in types},
    }


#: One server-sent event of the dashboard stream, as a client decodes it: its name and
#: its data, a JSON object (never a string).
_STREAM = {
    "description": "A stream of server-sent events",
    "content": {
        "text/event-stream": {
            "schema": {
                "type": "object",
                "description": (
                    "Each message: `event: <name>` and `data: <JSON object>` lines; a client "
                    "that falls behind or stops reading is disconnected and reconnects "
                    "(`retry: 1000`) to a fresh snapshot"
                ),
                "required": ["event", "data"],
                "properties": {
                    "event": {"type": "string", "enum": ["snapshot", "change", "tick"]},
                    "data": {"type": "object", "contentMediaType": "application/json"},
                },
            }
        }
    },
}

_PAGE_PARAMS = [
    _query("offset", "integer", "Skip this many VMs", minimum=0, maximum=10**9, default=0),
    _query("limit", "integer", "At most this many VMs", minimum=1, maximum=1000, default=200),
]  # fmt: skip

_KIND_SCOPES = [
    _query("region", description="Only the scopes of this region (one of the fleet's)",
           minLength=1),
    _query("kind", description="Only the scopes of this kind",
           enum=["standalone", "availability_set", "scale_set", "cloud_service"]),
    _query("q", description="Only the scopes whose name holds this, any case (empty: any)",
           maxLength=200),
    _query("offset", "integer", "Skip this many matching scopes", minimum=0, maximum=10**9,
           default=0),
    _query("limit", "integer", "At most this many scopes", minimum=1, maximum=1000, default=50),
]  # fmt: skip
_SCOPE_FILTER = _query("q", description="Only VMs whose name or host holds this", maxLength=200)
_SEARCH = {**_query("q", description="What a VM's name or host holds", minLength=1,
                    maxLength=200), "required": True}  # fmt: skip
_TARGET_PARAMS = [
    _query("q", description="What the names start with (ignoring case; empty: any)",
           maxLength=200),
    _query("limit", "integer", "At most this many suggestions", minimum=1, maximum=100,
           default=20),
    _query("kinds", description="Comma-separated kinds to suggest: vm, host, scope (default "
           "all three)", pattern="^(vm|host|scope)(,(vm|host|scope))*$"),
]  # fmt: skip

_SECONDS = {"minimum": 0, "maximum": 1e12}
_REPORT_PARAMS = [
    _query("since", "number", "Only events created at or after this POSIX time", **_SECONDS),
    _query("stale_after", "number", "A VM silent this long (s) stopped polling (default 30)",
           **_SECONDS),
]  # fmt: skip
_REPORT_PARAMS_TAGGED = [
    *_REPORT_PARAMS,
    _query("verdict", description="The id of a kept verdict (an answer's Forewarn-Verdict "
           "header): that very verdict, not one graded since (410: no longer kept; a "
           "since or stale_after given must be its own)", minLength=1, maxLength=100),
    _query("pin", "boolean", "true: keep the verdict answered for requests that name it by "
           "its id, beside any graded after it, until unasked for 30 s"),
    {"name": "If-None-Match", "in": "header", "required": False, "schema": {"type": "string"},
     "description": "The ETag of a verdict held: 304 with no body while it still holds"},
]  # fmt: skip
#: ``GET /api/v1/reactions`` is rolled up (its lists of VMs cut, each cut counted in
#: ``trimmed``) unless these ask for single VMs or for the whole verdict.
_REACTION_SHAPE = [
    _query("full", "boolean", "true: the whole verdict, a row per VM (unbounded; as before "
           "the roll-up)"),
    _query("vms", description="A page of single VMs in 'vms': all, attention, not-polling or a "
           "VM verdict", enum=["all", "attention", "not-polling", "no-notice", "missed",
                               "unlisted", "detected", "waiting", "approved",
                               "created-started", "unseen", "none"]),
    _query("scope", description="Only the VMs of this scope (vms=all unless vms says)",
           minLength=1),
    _query("scopes", description="A page of every per-scope row of this list (rolled up: "
           "the first 50 of each region and kind)", enum=["by_scope", "event_scopes"]),
    _query("region", description="Only the scopes of this region (with scopes)", minLength=1),
    _query("kind", description="Only the scopes of this kind (with scopes)",
           enum=["standalone", "availability_set", "scale_set", "cloud_service"]),
    _query("q", description="Only the scopes whose name holds this, any case (with scopes)",
           minLength=1, maxLength=200),
    _query("offset", "integer", "Skip this many matching VMs (or scopes)", minimum=0,
           maximum=10**9, default=0),
    _query("limit", "integer", "At most this many VMs (or scopes)", minimum=1, maximum=10_000,
           default=200),
]  # fmt: skip
_ETAG = {"ETag": {"description": "Weak tag of the verdict (not of when it was graded)",
                  "schema": {"type": "string"}},
         "Forewarn-Verdict": {"description": "The id the verdict is kept by (verdict= asks "
                              "for it again); absent when it is not kept (graded with "
                              "injected faults)", "schema": {"type": "string"}}}  # fmt: skip
_UNCHANGED = {"304": {"description": "The verdict is still the one tagged", "headers": _ETAG}}
_GONE = {
    "410": {
        "description": "The verdict named by verdict= is no longer kept",
        "content": {"application/json": {"schema": _ref("Error")}},
    }
}


def _tagged(ok: dict[str, Any]) -> dict[str, Any]:
    """A 200 answer with its ETag, the 304 of a matching If-None-Match, and the 410 of a
    verdict no longer kept."""
    return {"200": {**ok, "headers": _ETAG}, **_UNCHANGED, **_GONE}


def _rehearsal_paths() -> dict[str, Any]:
    """The report and the dashboard's routes."""
    return {
        "/api/v1/reactions": {
            "get": _op(
                "Verdict on how the fleet reacted, rolled up by scope (single VMs a page "
                "at a time: vms, scope, offset, limit; every scope's row: scopes, region, "
                "kind, q, offset, limit; full=true: every row)",
                _tagged(_json(_ref("ReactionReport"))),
                params=[*_REPORT_PARAMS_TAGGED, *_REACTION_SHAPE],
            )
        },
        "/api/v1/report": {
            "get": _op(
                "The same verdict as an HTML page (timelines, latency histograms), rolled up "
                "unless full=true",
                _tagged(_content("text/html")),
                params=[*_REPORT_PARAMS_TAGGED, _REACTION_SHAPE[0]],
            )
        },
        "/api/v1/dashboard": {
            "get": _op(
                "What the dashboard draws first: the fleet one row per region and scope "
                "kind, counted, with its first 50 scopes worst first",
                {"200": _json({})},
            )
        },
        "/api/v1/dashboard/scopes": {
            "get": _op(
                "The scopes of a region and kind (or whose name holds q), worst first, a "
                "page at a time",
                {"200": _json({})},
                params=_KIND_SCOPES,
            )
        },
        "/api/v1/dashboard/scopes/{scope}": {
            "get": _op(
                "The VMs of one scope, a page at a time (404: no such scope)",
                {"200": _json({})},
                params=[_path_param("scope"), *_PAGE_PARAMS, _SCOPE_FILTER],
            )
        },
        "/api/v1/dashboard/vms": {
            "get": _op(
                "The VMs whose name or host holds q, a page at a time",
                {"200": _json({})},
                params=[_SEARCH, *_PAGE_PARAMS],
            )
        },
        "/api/v1/dashboard/targets": {
            "get": _op(
                "The VMs, hosts and scopes whose name starts with q, a few (the trigger "
                "form's suggestions), with how many matched",
                {"200": _json({})},
                params=_TARGET_PARAMS,
            )
        },
        "/api/v1/stream": {
            "get": _op(
                "Server-sent events: a snapshot, then each change and a tick every second",
                {"200": _STREAM},
            )
        },
        "/api/v1/scenarios": {
            "get": _op("Named scenarios the server plays, and the runs started", {"200": _json({})})
        },
        "/api/v1/scenarios/runs": {
            "post": _op(
                "Play a named scenario in the background (through this API)",
                {"202": _json({})},
                body="ScenarioRunBody",
            )
        },
        "/dashboard/{name}": {
            "get": _op(
                "A file of the dashboard page (no token needed)",
                {"200": _content("text/javascript", "text/css", "text/html")},
                params=[_path_param("name")],
            )
        },
    }


def _finish(paths: dict[str, Any], token: bool) -> None:
    """Rules of every operation: the bearer token (but on public paths) when the server
    has one, and JSON for every state-changing request."""
    for path, item in paths.items():
        for method, op in item.items():
            op["security"] = [] if path in _PUBLIC or not token else [{"bearer": []}]
            if op["security"]:
                op["responses"]["401"] = _json(_ref("ErrorOut"), "Missing or wrong token")
            if method == "post":
                op["responses"]["415"] = _json(_ref("ErrorOut"), "Not sent as application/json")
            if path.startswith("/api/"):
                op["responses"]["503"] = _json(_ref("ErrorOut"), _UNAVAILABLE)


#: The rehearsal report's paths, served when the app was given a reaction tracker.
REPORT_PATHS = ("/api/v1/reactions", "/api/v1/report")


def openapi_document(
    version: str,
    *,
    token: bool = False,
    report: bool = True,
    eventgrid: bool = False,
    schemas: bool = True,
) -> dict[str, Any]:
    """OpenAPI 3.1 for every control route; ``token``: the server requires a bearer token;
    ``report``: it serves the rehearsal report; ``eventgrid``: Event Grid subscriptions;
    ``schemas``: with the bodies' schemas (else ``with_schemas`` adds them: what the
    routes read is the paths, and the schemas cost a start a tenth of a second)."""
    array = {"type": "array", "items": {}}
    event_action = {
        action: {
            "post": _op(
                summary,
                {"200": _json(_ref("EventOut"))},
                body="ActionBody",
                params=[_path_param("event_id")],
            )
        }
        for action, summary in (
            ("approve", "Approve an event (as the platform operator)"),
            ("start", "Start the event's operation now"),
            ("cancel", "Cancel a Scheduled event (no impact)"),
            ("complete", "End a Started event now"),
        )
    }
    paths: dict[str, Any] = {
        "/api/v1/topology": {"get": _op("Scopes, hosts and VMs", {"200": _json({})})},
        "/api/v1/vms": {
            "get": _op("Every VM", {"200": _json({"type": "array", "items": _ref("VmOut")})})
        },
        "/api/v1/vms/{name}": {
            "get": _op(
                "One VM and its scope's kind, by name (exact first, then ignoring case); "
                "404 names a few of the fleet's VMs",
                {"200": _json(_ref("VmDetailOut"))},
                params=[_path_param("name")],
            )
        },
        "/api/v1/events": {
            "get": _op(
                "Live events",
                {"200": _json({"type": "array", "items": _ref("EventOut")})},
                params=[_query("scope"), _query("vm")],
            )
        },
        "/api/v1/events/{event_id}": {
            "get": _op(
                "One live event", {"200": _json(_ref("EventOut"))}, params=[_path_param("event_id")]
            )
        },
        **{f"/api/v1/events/{{event_id}}/{a}": v for a, v in event_action.items()},
        "/api/v1/operations": {
            "get": _op(
                "Operations, oldest first",
                {"200": _json({"type": "array", "items": _ref("OperationOut")})},
            ),
            "post": _op(
                "Create an operation", {"201": _json(_ref("OperationOut"))}, body="OperationBody"
            ),
        },
        "/api/v1/operations/{operation_id}": {
            "get": _op(
                "One operation",
                {"200": _json(_ref("OperationOut"))},
                params=[_path_param("operation_id")],
            )
        },
        "/api/v1/catalogue": {
            "get": _op("Operation kinds and their defaults", {"200": _json(array)})
        },
        "/api/v1/documents/{vm}": {
            "get": _op(
                "The Scheduled Events document a VM sees",
                {"200": _json({})},
                params=[
                    _path_param("vm"),
                    _query(
                        "api-version", enum=list(SUPPORTED_VERSIONS), default=SUPPORTED_VERSIONS[-1]
                    ),
                ],
            )
        },
        "/api/v1/clock": {"get": _op("The platform clock", {"200": _json(_ref("ClockOut"))})},
        "/api/v1/clock/advance": {
            "post": _op(
                "Advance a virtual clock, firing due timers in order",
                {"200": _json(_ref("ClockOut"))},
                body="AdvanceBody",
            )
        },
        "/api/v1/history": {
            "get": _op(
                "Append-only history",
                {"200": _json(array)},
                params=_HISTORY_PARAMS,
            )
        },
        **_rehearsal_paths(),
        "/": {
            "get": _op(
                "Where the API and its documentation are (a browser asking for HTML gets "
                "the dashboard)",
                {
                    "200": {
                        "description": "OK",
                        "content": {
                            "application/json": {"schema": {}},
                            "text/html": {"schema": {"type": "string"}},
                        },
                    }
                },
            )
        },
        "/metrics": {"get": _op("Prometheus metrics", {"200": _text()})},
        "/healthz": {"get": _op("Liveness", {"200": _json({})})},
        "/openapi.json": {"get": _op("This document", {"200": _json({})})},
    }
    if not report:
        for path in REPORT_PATHS:
            del paths[path]
    paths.update(drill_paths(_op, _ref, _json))
    paths.update(rollout_paths(_op, _ref, _json, _path_param))
    if eventgrid:
        paths.update(_eventgrid_paths())
    _finish(paths, token)
    return {
        "openapi": "3.1.0",
        "security": [{"bearer": []}] if token else [],
        "info": {
            "title": "forewarn control API",
            "version": version,
            "description": (
                "State-changing requests must be sent as Content-Type: application/json. "
                "The API answers only to its own address (on loopback: any loopback address "
                "or localhost) and names given with --control-host, and refuses cross-origin "
                'requests. Every error is {"error": "..."}.'
            ),
        },
        "paths": paths,
        "components": {
            "schemas": schema_components() if schemas else {},
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The server's --control-token (required off loopback)",
                }
            },
        },
    }


def _eventgrid_paths() -> dict[str, Any]:
    """Event Grid subscriptions (ARM's eventSubscriptions body) and their deliveries."""
    name = [_path_param("name")]
    listing = {"type": "array", "items": {"type": "object"}}
    body = {"type": "object", "required": ["name", "properties"]}
    create = _op("Subscribe a webhook (after its validation handshake)", {"201": _json({})})
    create["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    return {
        "/api/v1/eventgrid/subscriptions": {
            "get": _op("Event Grid subscriptions", {"200": _json(listing)}),
            "post": create,
        },
        "/api/v1/eventgrid/subscriptions/{name}": {
            "get": _op("One subscription", {"200": _json({})}, params=name),
            "delete": _op("Remove a subscription", {"204": {"description": "Removed"}},
                          params=name),
        },
        "/api/v1/eventgrid/deliveries": {
            "get": _op(
                "Delivery attempts, newest last",
                {"200": _json(listing)},
                params=[_query("subscription"),
                        _query("limit", "integer", minimum=0, maximum=2000, default=200)],
            )
        },
        "/api/v1/eventgrid/validate/{name}": {
            "get": _op("Finish a manual validation handshake (the validationUrl)",
                       {"200": _json({})}, params=[*name, _query("code")])
        },
    }  # fmt: skip


def with_schemas(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` (made with ``schemas=False``) with the bodies' schemas."""
    return {**document, "components": {**document["components"], "schemas": schema_components()}}
