"""The dashboard's routes: the page, its static files, a snapshot, the live stream, the
scopes of a region and kind (or named so) a page at a time, the VMs of a scope (or
matching a search) a page at a time, and the trigger form's suggestions (the targets
whose name starts with what a user typed).

The page and its files are public (a browser's navigation carries no token; they hold no
data). Everything they show comes from token-guarded API routes, which the page calls
with the token it keeps in ``sessionStorage`` (no cookie, so no cross-site request can
ride on it). The page forbids being framed (no clickjacking of its buttons) and loads
nothing from elsewhere.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from functools import cache
from importlib import resources
from typing import Any, Protocol

import msgspec
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Scope

from forewarn.control.dashboard.drills import ResetLog
from forewarn.control.dashboard.fleet_rollup import PAGE_LIMIT, VmPage, scope_page, search
from forewarn.control.dashboard.hub import RELOAD, Hub, Message, sse
from forewarn.control.dashboard.kind_rollup import KEPT, kind_rollup, scopes_page
from forewarn.control.dashboard.stream_messages import snapshot
from forewarn.control.dashboard.targets import KINDS, MAX_LIMIT, TargetIndex
from forewarn.control.dashboard.wire import WireResponse, wire_transport
from forewarn.control.json_views import json_error, not_utf8
from forewarn.control.query_params import checked_scope_kind, named
from forewarn.control.qvalues import weighted
from forewarn.control.schemas import ScenarioRunBody
from forewarn.fabric import Fabric, NotFoundError
from forewarn.rehearsal import ReactionTracker

__all__ = ["STATIC_PREFIX", "DashboardRoutes", "ScenarioHook", "is_public", "wants_page"]

STATIC_PREFIX = "/dashboard/"
#: Recent history entries in a snapshot (newer ones arrive live).
HISTORY = 200
#: VMs in a page of a scope when the request does not say.
DEFAULT_LIMIT = 200
#: Suggestions of a target when the request does not say.
DEFAULT_TARGETS = 20

_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
          ".html": "text/html; charset=utf-8", ".svg": "image/svg+xml"}  # fmt: skip
_SECURITY = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; "
        "base-uri 'none'; form-action 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


class ScenarioHook(Protocol):
    """Plays named scenarios for the dashboard (the server gives one; without it the
    page's scenario section stays hidden). Runs go through the control API itself, as
    ``forewarn scenario run`` would."""

    def names(self) -> list[str]:
        """Scenario names the dashboard may offer."""
        ...

    def start(self, name: str, control_url: str) -> dict[str, Any]:
        """Start playing ``name`` against the control API at ``control_url``; raises
        ``NotFoundError`` for an unknown name, ``Conflict`` while another one plays."""
        ...

    def runs(self) -> list[dict[str, Any]]:
        """Every run started, newest last: name, status, and how it went."""
        ...


def wants_page(accept: str | None) -> bool:
    """True when a request to ``/`` prefers HTML (a browser) over JSON (every API
    client, ``curl`` and ``Accept: */*`` included, keeps getting the JSON index)."""
    if not accept:
        return False
    ranges = weighted(accept)
    html = ranges.get("text/html", 0.0)
    if html <= 0:
        return False
    json = ranges.get("application/json", ranges.get("application/*", ranges.get("*/*", 0.0)))
    return html > json


def is_public(scope: Scope) -> bool:
    """Requests that need no token: the page (``/`` asked for as HTML) and its files."""
    path = scope.get("path", "")
    if path.startswith(STATIC_PREFIX):
        return True
    if path != "/" or scope.get("method") not in ("GET", "HEAD"):
        return False
    accept = [v.decode("latin-1") for k, v in scope.get("headers", ()) if k.lower() == b"accept"]
    return wants_page(", ".join(accept))


@cache
def _static(name: str) -> bytes | None:
    folder = resources.files(__package__).joinpath("static")
    entry = folder.joinpath(name)
    if "/" in name or name.startswith(".") or not entry.is_file():
        return None
    return entry.read_bytes()


class DashboardRoutes:
    """Handlers of the dashboard over one fabric."""

    def __init__(
        self,
        fabric: Fabric,
        scenarios: ScenarioHook | None = None,
        reactions: ReactionTracker | None = None,
    ) -> None:
        self.fabric = fabric
        self.hub = Hub(fabric, reactions)
        self.scenarios = scenarios
        #: When each drill began (the fleet's resets): the page shows the latest one's.
        self.resets = ResetLog(fabric.history)
        #: The snapshot message being built (or last built), and the hub's publish count
        #: when it began: every stream that needs one meanwhile shares it.
        self._building: tuple[int, asyncio.Future[bytes]] | None = None
        #: The fleet's names, sorted for the trigger form's suggestions (made on first use).
        self._targets: asyncio.Future[TargetIndex] | None = None

    def close(self) -> None:
        """End every live stream (the server is stopping)."""
        self.hub.close()

    async def page(self, request: Request) -> Response:
        """The dashboard itself."""
        body = _static("index.html")
        assert body is not None, "the dashboard's index.html is missing from the package"
        return Response(body, media_type=_TYPES[".html"], headers=_SECURITY)

    async def static(self, request: Request) -> Response:
        """One of the page's files (a fixed set shipped in the package)."""
        name = request.path_params["name"]
        suffix = name[name.rfind(".") :] if "." in name else ""
        body = _static(name) if suffix in _TYPES else None
        if body is None:
            return json_error(f"no dashboard file called {name!r}", 404)
        return Response(body, media_type=_TYPES[suffix], headers=_SECURITY)

    async def _snapshot(self) -> dict[str, object]:
        history = await run_in_threadpool(self.fabric.history, limit=HISTORY, newest=True)
        resets = await run_in_threadpool(self.resets.times)
        names = self.scenarios.names() if self.scenarios is not None else None
        kinds = kind_rollup(self.fabric, self.hub.kinds(), await self.hub.counted())
        return snapshot(self.fabric, kinds=kinds, history=history, scenarios=names,
                        resets=resets)  # fmt: skip

    async def snapshot_event(self, since: int) -> bytes:
        """The ``snapshot`` event for a stream that subscribed (or was told to reload) when
        the hub had published ``since`` changes: built once for every stream asking at
        the same time (a reload asks for 300 at once), from a build begun no earlier."""
        building = self._building
        if building is None or building[0] < since:
            future = asyncio.ensure_future(self._build_snapshot())
            building = self._building = (self.hub.published, future)
        return await asyncio.shield(building[1])  # a stream that ends cancels only itself

    async def _build_snapshot(self) -> bytes:
        return sse("snapshot", await self._snapshot())

    async def state(self, request: Request) -> Response:
        """Everything the page draws, once (the stream starts with the same)."""
        return Response(msgspec.json.encode(await self._snapshot()), media_type="application/json")

    async def kind_scopes(self, request: Request) -> Response:
        """The scopes of ``region`` and ``kind`` (either, both or neither) whose name holds
        ``q``, worst first, a page at a time (``offset``, ``limit``): what the page lists
        of a kind it opens, past the ``KEPT`` the snapshot holds, and the scopes its
        filter finds."""
        kinds = self.hub.kinds()
        try:
            region, kind = _where(request, kinds.regions)
            offset, limit, q = _paging(request, default=KEPT)
        except ValueError as exc:
            return json_error(str(exc), 400)
        page = scopes_page(self.fabric, kinds, await self.hub.counted(), region=region,
                           kind=kind, q=q, offset=offset, limit=limit)  # fmt: skip
        return Response(msgspec.json.encode(page), media_type="application/json")

    async def scope_vms(self, request: Request) -> Response:
        """The VMs of one scope, a page at a time (``offset``, ``limit``), those whose name
        or host holds ``q`` only when given: what the page shows of a scope it opens."""
        scope_id = request.path_params["scope"]
        if scope_id not in self.fabric.topology.scopes:
            count = len(self.fabric.topology.scopes)
            return json_error(f"no scope called {scope_id!r} in this fleet ({count} scopes: "
                              "GET /api/v1/dashboard lists them)", 404)  # fmt: skip
        try:
            offset, limit, q = _paging(request)
        except ValueError as exc:
            return json_error(str(exc), 400)
        if q:
            await self._host_index()
        page = scope_page(self.fabric.topology, scope_id, offset=offset, limit=limit, q=q,
                          statuses=self.fabric.vm_statuses(), polls=self.hub.polls())  # fmt: skip
        return _page_response(page)

    async def search_vms(self, request: Request) -> Response:
        """The VMs of the fleet whose name or host holds ``q``, a page at a time: the
        page's fleet filter (a pass over every VM's name, the loop given back as it goes)."""
        try:
            offset, limit, q = _paging(request)
        except ValueError as exc:
            return json_error(str(exc), 400)
        if not q:
            return json_error("query parameter q is missing or empty: the text a VM's "
                              "name or host holds", 400)  # fmt: skip
        await self._host_index()
        statuses, polls = self.fabric.vm_statuses(), self.hub.polls()
        page = await search(self.fabric.topology, q, offset=offset, limit=limit,
                            statuses=statuses, polls=polls)  # fmt: skip
        return _page_response(page)

    async def targets(self, request: Request) -> Response:
        """The VMs, hosts and scopes whose name starts with ``q`` (ignoring case), at most
        ``limit``, of the ``kinds`` asked for: what the trigger form suggests as a user
        types, with how many matched in all (never a pass over the fleet: ``targets``)."""
        try:
            q, limit, kinds = _suggesting(request)
        except ValueError as exc:
            return json_error(str(exc), 400)
        if self._targets is None:  # built once, on a thread; every early request waits
            build = run_in_threadpool(TargetIndex, self.fabric.topology)
            self._targets = asyncio.ensure_future(build)
        try:
            index = await asyncio.shield(self._targets)
        except Exception:  # the next request tries again (a cancelled one waits no more)
            self._targets = None
            raise
        found = index.suggest(q, limit=limit, kinds=kinds)
        return Response(msgspec.json.encode(found), media_type="application/json")

    async def _host_index(self) -> None:
        """Make the fleet's host index, once, on a thread: 1.6 s at a million VMs, which
        on the loop would hold every VM's poll that long (a thread lets it in between)."""
        await run_in_threadpool(self.fabric.topology.vms.host_index)

    async def scenarios_list(self, request: Request) -> Response:
        """The scenarios the dashboard offers, and the runs started from it."""
        hook = self.scenarios
        out = {"names": hook.names(), "runs": hook.runs()} if hook else {"names": [], "runs": []}
        return Response(msgspec.json.encode(out), media_type="application/json")

    async def scenario_run(self, request: Request) -> Response:
        """Start playing a named scenario (202: it plays in the background)."""
        if self.scenarios is None:
            raise NotFoundError("this server plays no scenarios (no scenario engine)")
        raw = await request.body()
        try:
            body = msgspec.json.decode(raw or b"{}", type=ScenarioRunBody)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            why = "it is not valid UTF-8" if not_utf8(raw) else exc
            return json_error(f'invalid body: {why}; expected {{"name": "..."}}', 400)
        server = request.scope.get("server") or ("127.0.0.1", 80)
        host = f"[{server[0]}]" if ":" in str(server[0]) else str(server[0])
        run = await run_in_threadpool(self.scenarios.start, body.name, f"http://{host}:{server[1]}")
        return Response(msgspec.json.encode(run), 202, media_type="application/json")

    async def stream(self, request: Request) -> Response:
        """Server-sent events: a snapshot, then every change and a tick each second."""
        if self.hub.closed:
            return json_error("the server is stopping", 503)
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        transport = wire_transport(request.scope)
        if transport is not None:  # forewarn's own listener: straight to the connection
            return WireResponse(
                transport, self.hub, self.snapshot_event,
                media_type="text/event-stream", headers=headers,
            )  # fmt: skip
        queue = self.hub.subscribe()  # before the snapshot: no change falls in between
        since = self.hub.published

        async def events() -> AsyncIterator[bytes]:
            held: list[Message] = []  # taken from the queue, for the next turn
            try:
                yield b"retry: 1000\n\n" + await self.snapshot_event(since)
                while True:
                    message = held.pop() if held else await queue.get()
                    if message is None:
                        return
                    if message is RELOAD:
                        message = await self.snapshot_event(self.hub.published)
                    parts = [message]
                    while not queue.empty():  # behind: what is queued goes in one write
                        more = queue.get_nowait()
                        if more is None or more is RELOAD:
                            held.append(more)
                            break
                        parts.append(more)
                    yield parts[0] if len(parts) == 1 else b"".join(parts)
            finally:
                self.hub.unsubscribe(queue)

        return StreamingResponse(events(), media_type="text/event-stream", headers=headers)


def _whole(request: Request, name: str, default: int, lowest: int, highest: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or not lowest <= int(raw) <= highest:
        raise ValueError(f"query parameter {name} must be a whole number from {lowest} "
                         f"to {highest}, not {raw!r}")  # fmt: skip
    return int(raw)


def _paging(request: Request, default: int = DEFAULT_LIMIT) -> tuple[int, int, str]:
    """``offset``, ``limit`` and ``q`` of a page request (``ValueError``: which is wrong)."""
    offset = _whole(request, "offset", 0, 0, 10**9)
    limit = _whole(request, "limit", default, 1, PAGE_LIMIT)
    q = request.query_params.get("q", "")
    if len(q) > 200:
        raise ValueError("query parameter q is longer than 200 characters")
    return offset, limit, q


def _where(request: Request, regions: list[str]) -> tuple[str | None, str | None]:
    """``region`` (one of the fleet's) and ``kind`` (a scope kind) of a request for a
    page of scopes, None where not given (``ValueError``: which is wrong)."""
    region, kind = named(request, "region"), named(request, "kind")
    if region is not None and region not in regions:
        more = f" and {len(regions) - 10} more" if len(regions) > 10 else ""
        raise ValueError(f"query parameter region: no region {region[:100]!r} in this fleet "
                         f"(its regions: {', '.join(regions[:10])}{more})")  # fmt: skip
    return region, checked_scope_kind(kind)


def _suggesting(request: Request) -> tuple[str, int, tuple[str, ...]]:
    """``q``, ``limit`` and ``kinds`` of a suggestion request (``ValueError``: which is
    wrong): q may be empty (every name, shortest first), kinds a comma-separated list."""
    q = request.query_params.get("q", "")
    if len(q) > 200:
        raise ValueError("query parameter q is longer than 200 characters")
    limit = _whole(request, "limit", DEFAULT_TARGETS, 1, MAX_LIMIT)
    raw = request.query_params.get("kinds")
    if raw is None:
        return q, limit, KINDS
    kinds = tuple(k.strip() for k in raw.split(","))
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not raw.strip():
        raise ValueError(f"query parameter kinds must list some of {', '.join(KINDS)} "
                         f"(comma-separated), not {raw!r}")  # fmt: skip
    return q, limit, kinds


def _page_response(page: VmPage) -> Response:
    return Response(msgspec.json.encode(page), media_type="application/json")
