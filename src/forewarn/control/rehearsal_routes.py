"""Routes of the rehearsal report: the verdicts as JSON, and as an HTML page.

``GET /api/v1/reactions`` grades what the reaction tracker recorded (this process's
latest facts are written first, then everything every front-end wrote is read back),
rolled up (``rehearsal/bounded.py``: the same size at any fleet; ``?vms=`` pages the
rows of single VMs, ``?scopes=`` the per-scope rows, ``?full=true`` is the whole
verdict, a row per VM);
``GET /api/v1/report`` is the same verdict as a self-contained HTML page.

Both carry an entity tag of the verdict (``validators.py``): a client that sends it back
in ``If-None-Match`` gets a 304 with no body while the verdict is the same, and is spared
megabytes at 10,000 VMs (the page asks after every change and every 10 s): what a 304
saves is the bytes, the page's parse and redraw, and for the HTML page its rendering.
The graded verdict itself is kept between requests while nothing it was graded from moved
(``rehearsal/verdict_memo.py``: no fact written by any front-end, the clock still), and
graded anew once anything did.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple, TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from forewarn.contract.control_wire import PIN_PARAM, VERDICT_HEADER, VERDICT_PARAM
from forewarn.control.json_views import json_error
from forewarn.control.pieces import encode_in_pieces
from forewarn.control.query_params import BadQuery, checked_scope_kind, named
from forewarn.control.validators import matches, verdict_tag
from forewarn.fabric import Fabric
from forewarn.rehearsal import ReactionTracker
from forewarn.rehearsal.bounded import (
    SCOPE_LISTS,
    VM_FILTERS,
    bounded,
    scope_page,
    vm_page,
)
from forewarn.rehearsal.grading import ReactionReport, grade
from forewarn.rehearsal.report import render_report
from forewarn.rehearsal.report.charts import histogram
from forewarn.rehearsal.verdict_memo import KEEP_SECONDS, VerdictKey
from forewarn.rehearsal.verdicts import DEFAULT_STALE_AFTER

__all__ = ["ReactionRoutes"]

#: Any cache may keep an answer, but must ask again (with its tag) before using it.
_REVALIDATE = "no-cache"

T = TypeVar("T")


#: A query parameter that is not what the route takes.
_BadParam = BadQuery


def _number(request: Request, name: str, default: float | None) -> float | None:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.strip():  # the document says a number; leave the parameter out instead
        raise _BadParam(f"query parameter {name} is empty; give a number of seconds or omit it")
    try:
        value = float(raw)
    except ValueError:
        raise _BadParam(f"query parameter {name} must be a number of seconds") from None
    if not math.isfinite(value) or value < 0 or value > 1e12:
        raise _BadParam(f"query parameter {name} must be a number from 0 to 1e12")
    return value


def _window(request: Request) -> tuple[float | None, float]:
    """``since`` and ``stale_after`` of a verdict request (``_BadParam``: not numbers)."""
    since = _number(request, "since", None)
    stale = _number(request, "stale_after", DEFAULT_STALE_AFTER)
    assert stale is not None
    return since, stale


class _Pin(NamedTuple):
    """A request's ``verdict=ID``: the kept verdict it reads, and the window it gave (a
    window given must be that verdict's own)."""

    id: str
    since: float | None
    stale_after: float | None

    def check(self, report: ReactionReport) -> None:
        given = {"since": self.since, "stale_after": self.stale_after}
        kept = {"since": report.since, "stale_after": report.stale_after}
        for name, value in given.items():
            if value is not None and value != kept[name]:
                raise _BadParam(f"verdict {self.id} was graded with {name}={kept[name]}; "
                                f"leave {name} out or give the same")  # fmt: skip


def _pin(request: Request) -> _Pin | bool | None:
    """The kept verdict a request names (``verdict=ID``), if any; True: ``pin=true``, the
    verdict answered is to be pinned (its reader will ask for it again by id)."""
    raw = named(request, VERDICT_PARAM)
    if _flag(request, PIN_PARAM):
        if raw is not None:
            raise _BadParam(f"{PIN_PARAM}=true pins the verdict graded now; "
                            f"{VERDICT_PARAM}= names one kept: give one or the other")  # fmt: skip
        return True
    if raw is None:
        return None
    if len(raw) > 100:
        raise _BadParam("query parameter verdict is longer than 100 characters")
    return _Pin(raw, _number(request, "since", None), _number(request, "stale_after", None))


class _Gone(Exception):
    """The verdict a request names is no longer kept."""


def _gone(pin: _Pin) -> Response:
    return json_error(
        f"verdict {pin.id} is no longer kept (a verdict is kept {KEEP_SECONDS:.0f} s after "
        "it was last asked for, beside the latest graded); ask again without verdict",
        410,
    )


#: Rows of single VMs a page holds unless ``limit`` says, and at most.
PAGE = 200
MAX_PAGE = 10_000


def _count(request: Request, name: str, default: int, least: int, most: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.strip().isdigit() or not least <= int(raw) <= most:
        raise _BadParam(f"query parameter {name} must be a whole number from {least} to {most}")
    return int(raw)


def _flag(request: Request, name: str) -> bool:
    raw = request.query_params.get(name)
    if raw is None:
        return False
    if raw.lower() not in ("true", "false", "1", "0"):
        raise _BadParam(f"query parameter {name} takes true or false")
    return raw.lower() in ("true", "1")


class _Shape(NamedTuple):
    """How much of the verdict a request asks for: ``full`` (every row, as before the
    roll-up) or rolled up, with a page of single VMs when ``vms`` names which, or a page
    of per-scope rows when ``scopes`` names which list (of ``region``, ``kind``)."""

    full: bool
    vms: str | None
    scope: str | None
    offset: int
    limit: int
    scopes: str | None = None
    region: str | None = None
    kind: str | None = None
    q: str | None = None

    def shaped(self, report: ReactionReport) -> ReactionReport:
        if self.full:
            return report
        if self.scopes is not None:
            rows = scope_page(report, self.scopes, region=self.region, kind=self.kind,
                              q=self.q, offset=self.offset, limit=self.limit)  # fmt: skip
            return bounded(report, scopes=rows)
        if self.vms is None:
            return bounded(report)
        page = vm_page(report, self.vms, self.scope, self.offset, self.limit)
        return bounded(report, page)


class _ScopesShape(NamedTuple):
    scopes: str | None
    region: str | None
    kind: str | None
    q: str | None


def _scopes_shape(request: Request) -> _ScopesShape:
    """``scopes``, ``region``, ``kind`` and ``q`` of a request for a page of per-scope
    rows (``q``: a scope name holds it)."""
    scopes = request.query_params.get("scopes")
    region, kind, q = (named(request, n) for n in ("region", "kind", "q"))
    if scopes is not None and scopes not in SCOPE_LISTS:
        raise _BadParam(f"query parameter scopes takes one of {', '.join(SCOPE_LISTS)}")
    checked_scope_kind(kind)
    if q is not None and len(q) > 200:
        raise _BadParam("query parameter q is longer than 200 characters")
    if scopes is None and (region, kind, q) != (None, None, None):
        raise _BadParam("region, kind and q filter a page of per-scope rows: give scopes too")
    return _ScopesShape(scopes, region, kind, q)


def _shape(request: Request) -> _Shape:
    """The shape a request asks for (``_BadParam``: parameters that do not fit)."""
    full = _flag(request, "full")
    which = request.query_params.get("vms")
    scope = named(request, "scope")
    scopes, region, kind, q = _scopes_shape(request)
    offset = _count(request, "offset", 0, 0, 10**9)
    limit = _count(request, "limit", PAGE, 1, MAX_PAGE)
    paging = [n for n in ("offset", "limit") if n in request.query_params]
    if scopes is not None and (which is not None or scope is not None):
        raise _BadParam("scopes pages the per-scope rows; vms and scope page single VMs: "
                        "ask for one or the other")  # fmt: skip
    if full and scopes is not None:
        raise _BadParam("full=true is the whole verdict; it takes no scopes, region, kind or q")
    if scope is not None and which is None:
        which = "all"  # the VMs of a scope
    if which is not None and which not in VM_FILTERS:
        raise _BadParam(f"query parameter vms takes one of {', '.join(VM_FILTERS)}")
    if full and (which is not None or paging):
        raise _BadParam("full=true is the whole verdict; it takes no vms, scope, offset or limit")
    if paging and which is None and scopes is None:
        raise _BadParam("offset and limit page the rows of single VMs (give vms or scope) "
                        "or of scopes (give scopes)")  # fmt: skip
    return _Shape(full, which, scope, offset, limit, scopes, region, kind, q)


class ReactionRoutes:
    """The report's handlers over one fabric and the tracker of its reactions."""

    def __init__(self, fabric: Fabric, tracker: ReactionTracker) -> None:
        self.fabric = fabric
        self.tracker = tracker
        #: Each VM's scope (looked up in the table: no dict of a million VMs at start-up).
        self._scope_of = fabric.topology.vms.scope_ids()
        self._where: dict[str, tuple[str, str]] = {}

    def where(self, scope_id: str) -> tuple[str, str]:
        """A scope's region (its first VM's location) and kind, for the roll-ups."""
        known = self._where.get(scope_id)
        if known is None:
            topology = self.fabric.topology
            scope = topology.scopes.get(scope_id)
            if scope is None:
                return "?", "?"
            first = next(iter(scope.vm_names), None)
            vm = topology.vms.get(first) if first is not None else None
            region = vm.location if vm is not None else "?"
            known = self._where[scope_id] = (region, scope.kind.value)
        return known

    async def verdict(
        self, since: float | None, stale_after: float, finish: Callable[[ReactionReport], T]
    ) -> T:
        """``finish`` of the verdict on everything recorded about events created since
        ``since`` (``identified``'s, without its id)."""
        return (await self.identified(since, stale_after, finish))[1]

    async def identified(
        self,
        since: float | None,
        stale_after: float,
        finish: Callable[[ReactionReport], T],
        pin: _Pin | bool | None = None,
    ) -> tuple[str | None, T]:
        """``finish`` of the verdict on everything recorded about events created since
        ``since`` (or of the kept verdict ``pin`` names: ``_Gone`` when it is not kept;
        True: pinned from now), and the id it is kept by (None: not kept, graded with
        injected faults), all on the tracker's thread, below the event loop: grading
        takes some 0.2 s at 10,000 VMs and 5,000 events, and the facts and the verdict
        (some 10^5 objects) are made and freed there too (freed on the loop, they held it
        20-30 ms); only what ``finish`` makes of them comes back."""
        tracker = self.tracker
        if isinstance(pin, _Pin):

            def pinned() -> tuple[str | None, T]:
                report = tracker.verdicts.pinned(pin.id)
                if report is None:
                    raise _Gone(pin.id)
                pin.check(report)
                return pin.id, finish(report)

            return await tracker.off_loop(pinned)
        await tracker.flush()  # this process's latest facts first
        fabric = self.fabric
        deleted = fabric.deleted_vms()
        scope_of = self._scope_of
        # what the loop goes on changing, copied here (only the faulted requests since
        # ``since``: a report of the drill after a reset has none of the one before)
        tallies = {vm: w for vm, t in tracker.fault_tallies.items()
                   if (w := t.window(since)) is not None}  # fmt: skip
        polls = fabric.last_requests.copy() if tallies else {}
        now = fabric.clock.now()
        fleet = fabric.topology

        def grading() -> ReactionReport:
            facts = tracker.stored_facts(since)
            try:
                return grade(facts, now=now, since=since, stale_after=stale_after,
                             deleted=deleted, scope_of=scope_of, faults=tallies,
                             last_requests=polls, where=self.where)  # fmt: skip
            finally:
                facts.let_go()  # a row a VM and event: in pieces, not all as this returns

        def graded() -> tuple[str | None, T]:
            if tallies:  # how VMs coped with faults reads each VM's last request, unstored
                return None, finish(grading())
            key = VerdictKey(since=since, stale_after=stale_after, now=now, deleted=deleted,
                             writes=tracker.stored_writes(), fleet=fleet)  # fmt: skip
            verdict_id, report = tracker.verdicts.kept(key, grading)
            if pin:  # on this thread: no other grading lets it go in between
                tracker.verdicts.pin(verdict_id)
            return verdict_id, finish(report)

        return await tracker.off_loop(graded)

    async def _answered(
        self,
        since: float | None,
        stale_after: float,
        finish: Callable[[ReactionReport], T],
        pin: _Pin | bool | None,
    ) -> tuple[str | None, T] | Response:
        """``identified``, or the answer that refuses it: a 400 (a window the pinned
        verdict was not graded with) or a 410 (a verdict no longer kept)."""
        try:
            return await self.identified(since, stale_after, finish, pin)
        except _BadParam as exc:
            return json_error(str(exc), 400)
        except _Gone:
            assert isinstance(pin, _Pin)
            return _gone(pin)

    async def reactions(self, request: Request) -> Response:
        """The verdict as JSON, rolled up unless asked otherwise (304 while the client's
        tag still holds)."""
        try:
            since, stale = _window(request)
            shape = _shape(request)
            pin = _pin(request)
        except _BadParam as exc:
            return json_error(str(exc), 400)

        def encoded(report: ReactionReport) -> tuple[bytes, str]:  # full: megabytes
            body = encode_in_pieces(shape.shaped(report))
            return body, verdict_tag(body, "json", generated_at=report.generated_at)

        answer = await self._answered(since, stale, encoded, pin)
        if isinstance(answer, Response):
            return answer
        verdict_id, (body, tag) = answer
        headers = _headers(tag, verdict_id)
        if matches(request.headers.get("if-none-match"), tag):
            return Response(status_code=304, headers=headers)
        return Response(body, media_type="application/json", headers=headers)

    async def report(self, request: Request) -> Response:
        """The verdict as an HTML page, rolled up unless ``full=true`` (not rendered at
        all for a 304)."""
        try:
            since, stale = _window(request)
            full = _flag(request, "full")
            pin = _pin(request)
        except _BadParam as exc:
            return json_error(str(exc), 400)
        if_none_match = request.headers.get("if-none-match")

        def rendered(report: ReactionReport) -> tuple[str, str | None]:
            # the tag hashes what the page draws: the rolled-up verdict and the histograms
            # of the whole distributions, not the whole verdict (1.4 GB at 1M VMs) nor
            # every latency value (two million at 1M)
            drawn = report if full else bounded(report)
            charts = (histogram(report.detection), histogram(report.approval))
            body = encode_in_pieces(drawn)
            if not full:
                body += msgspec.json.encode(charts)
            # a timeline with no NotBefore ends at the grading instant (report/charts.py)
            drawn_to_now = any(e.not_before is None for e in report.events)
            at = None if drawn_to_now else report.generated_at
            tag = verdict_tag(body, "html" if full else "html-rolled", generated_at=at)
            if matches(if_none_match, tag):
                return tag, None
            return tag, render_report(drawn, histograms=charts)

        answer = await self._answered(since, stale, rendered, pin)
        if isinstance(answer, Response):
            return answer
        verdict_id, (tag, page) = answer
        headers = _headers(tag, verdict_id)
        if page is None:
            return Response(status_code=304, headers=headers)
        return Response(page, media_type="text/html; charset=utf-8", headers=headers)


def _headers(tag: str, verdict_id: str | None) -> dict[str, str]:
    """An answer's tag, its cache rule and the id of the verdict it was cut from."""
    headers = {"ETag": tag, "Cache-Control": _REVALIDATE}
    if verdict_id is not None:
        headers[VERDICT_HEADER] = verdict_id
    return headers
