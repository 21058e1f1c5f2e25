"""Serving a recorded sequence of documents to one VM, with its original timing (scaled).

``ReplayEndpoint`` is a stand-in for ``forewarn.imds.Endpoint``: the same transport serves
it (``serve_endpoint`` takes any object with ``handle(request) -> Reply``), and it keeps the
request rules clients depend on (the Metadata header, api-version, ETag/304, approval
bodies), but the documents are the recorded bytes, played on a clock of their own: the
recording's time runs ``time_scale`` times faster than the wall clock, from its first
document. Approvals are checked and reported, never acted on: a replay is fixed.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import parse_qsl

import msgspec

from forewarn.contract import (
    BAD_VERSION,
    FORWARDED_NOT_ALLOWED,
    METADATA_HEADER_MISSING,
    METHOD_NOT_ALLOWED,
    MISSING_VERSION,
    NOT_FOUND,
    StartRequestError,
    error_body,
    format_rfc1123,
    lookup_version,
    parse_not_before,
    parse_start_requests,
    version_error_body,
)
from forewarn.fabric.clock import Clock, wall_time
from forewarn.fleet.topology import VM
from forewarn.imds import INSTANCE_VERSIONS, ImdsSettings, Reply, Request
from forewarn.imds.instance import instance_document
from forewarn.imds.messages import TEXT
from forewarn.replay.recorded import Frame

__all__ = ["ReplayEndpoint", "shift_not_before"]

SCHEDULED_EVENTS = "/metadata/scheduledevents"
INSTANCE = "/metadata/instance"
VERSIONS = "/metadata/versions"

ApprovalCallback = Callable[[Frame, list[str]], None]


def shift_not_before(body: bytes, to_wall: Callable[[float], float]) -> bytes:
    """``body`` with every NotBefore moved by ``to_wall`` (recording time → wall time), so
    that a replayed event is as far ahead of the client's clock as it was when recorded.
    Everything else, key order included, is kept."""
    document: dict[str, Any] = msgspec.json.decode(body)
    for event in document.get("Events") or ():
        text = event.get("NotBefore") if isinstance(event, dict) else None
        try:
            when = parse_not_before(text) if isinstance(text, str) and text else None
        except ValueError:  # a date the wire model keeps as text: replayed as recorded
            when = None
        if when is not None:
            event["NotBefore"] = format_rfc1123(to_wall(when.timestamp()))
    return msgspec.json.encode(document)


def _etag_matches(header: bytes, incarnation: int) -> bool:
    """``If-None-Match`` names this incarnation (quotes and ``W/`` ignored) or is ``*``."""
    wanted = b"%d" % incarnation
    for candidate in header.split(b","):
        tag = candidate.strip().removeprefix(b"W/").removeprefix(b"w/").strip(b'"')
        if tag in (b"*", wanted):
            return True
    return False


class _Timeline:
    """Frames of one api-version (or of all), searchable by time."""

    def __init__(self, frames: Sequence[Frame], bodies: dict[int, bytes]) -> None:
        self.times = [f.t for f in frames]
        self.replies = [
            Reply(200, bodies[id(f)], ((b"etag", b'"%d"' % f.incarnation),)) for f in frames
        ]
        self.frames = list(frames)

    def at(self, now: float) -> tuple[Frame, Reply] | None:
        index = bisect.bisect_right(self.times, now) - 1
        if index < 0:
            return None
        return self.frames[index], self.replies[index]


class ReplayEndpoint:
    """Answers every request as VM ``vm``, with the frame current on its clock.

    The clock tells recording time: it starts at the first frame's time, running
    ``time_scale`` times faster than the wall clock, when ``start()`` is called, or at the
    first request when ``on_first_request`` (a replay then begins when the VM's client
    does, whenever that is). ``shift_times`` moves each NotBefore so it keeps its distance
    from the moment the document is served (else the recorded dates are served as they
    are). ``on_approve(frame, ids)`` hears each accepted approval.
    """

    settings = ImdsSettings(rate_limit=None)

    def __init__(
        self,
        vm: str,
        frames: Sequence[Frame],
        *,
        time_scale: float = 1.0,
        shift_times: bool = False,
        on_first_request: bool = False,
        on_approve: ApprovalCallback | None = None,
    ) -> None:
        if not frames:
            raise ValueError("nothing to replay")
        self.vm = vm
        self.frames = tuple(frames)
        self.time_scale = time_scale
        self.clock = Clock.virtual(start=frames[0].t)  # stands still until started
        self.started = asyncio.Event()
        self._shift_times = shift_times
        self._on_first_request = on_first_request
        self._on_approve = on_approve
        self._all = _Timeline(frames, {id(f): f.body for f in frames})
        self._by_version: dict[str, _Timeline] = {}
        self._instance = VM(name=vm, scope_id=vm, host="replay", address="127.0.0.1")

    @property
    def waits_for_first_request(self) -> bool:
        """True when the replay starts with the first request, not at once."""
        return self._on_first_request

    def start(self) -> None:
        """Start the replay's clock now (once)."""
        if self.started.is_set():
            return
        frames = self.frames
        self.clock = Clock(rate=self.time_scale, start=frames[0].t)
        bodies = {id(f): f.body for f in frames}
        if self._shift_times:
            wall0, recorded0 = wall_time(), self.clock.now()

            def to_wall(recorded: float) -> float:
                return wall0 + (recorded - recorded0) / self.time_scale

            bodies = {id(f): shift_not_before(f.body, to_wall) for f in frames}
        self._all = _Timeline(frames, bodies)
        for name in {f.api_version for f in frames if f.api_version is not None}:
            own = [f for f in frames if f.api_version in (name, None)]
            self._by_version[name] = _Timeline(own, bodies)
        self.started.set()

    def current(self, api_version: str | None = None) -> Frame:
        """The frame a VM asking for ``api_version`` gets now."""
        found = self._lookup(api_version)
        return found[0]

    def _lookup(self, api_version: str | None) -> tuple[Frame, Reply]:
        now = self.clock.now()
        own = self._by_version.get(api_version) if api_version is not None else None
        found = own.at(now) if own is not None else None
        if found is None:
            found = self._all.at(now)
        assert found is not None  # the clock never runs before the first frame
        return found

    def handle(self, request: Request) -> Reply:
        """Answer one request (never raises for anything a client can send)."""
        if self._on_first_request and not self.started.is_set():
            self.start()
        path = request.path.lower().rstrip("/") or "/"
        query = {k.lower(): v for k, v in parse_qsl(request.query.decode("latin-1"))}
        headers = dict(request.headers)
        if b"x-forwarded-for" in headers:
            return Reply(400, error_body(FORWARDED_NOT_ALLOWED))
        metadata = headers.get(b"metadata", b"").strip().lower() == b"true"
        if path in (VERSIONS, INSTANCE) or path.startswith(INSTANCE + "/"):
            if request.method != "GET":
                return Reply(405, error_body(METHOD_NOT_ALLOWED), ((b"allow", b"GET"),))
            if not metadata:
                return Reply(400, error_body(METADATA_HEADER_MISSING))
            if path == VERSIONS:
                return Reply(200, msgspec.json.encode({"apiVersions": list(INSTANCE_VERSIONS)}))
            return self._instance_reply(path, query)
        if path != SCHEDULED_EVENTS:
            return Reply(404, error_body(NOT_FOUND))
        if request.method not in ("GET", "POST"):
            return Reply(405, error_body(METHOD_NOT_ALLOWED), ((b"allow", b"GET, POST"),))
        name = query.get("api-version")
        if not name:
            return Reply(400, version_error_body(MISSING_VERSION))
        version = lookup_version(name)
        if version is None:
            return Reply(400, version_error_body(BAD_VERSION))
        if not metadata and (request.method == "GET" or version.post_needs_metadata_header):
            return Reply(400, error_body(METADATA_HEADER_MISSING))
        frame, reply = self._lookup(version.name)
        if request.method == "POST":
            return self._approve(frame, request.body)
        tag = headers.get(b"if-none-match")
        if tag is not None and _etag_matches(tag, frame.incarnation):
            return Reply(304, b"", reply.headers)
        return reply

    def _approve(self, frame: Frame, body: bytes) -> Reply:
        try:
            ids = parse_start_requests(body)
        except StartRequestError as exc:
            return Reply(400, error_body(str(exc)))
        visible = {e.event_id.lower() for e in frame.document.events}
        unknown = [i for i in ids if i.lower() not in visible]
        if unknown:
            return Reply(400, error_body(f"EventId {unknown[0]} is not in this VM's document"))
        if self._on_approve is not None:
            self._on_approve(frame, ids)
        return Reply(200, b"")

    def _instance_reply(self, path: str, query: dict[str, str]) -> Reply:
        newest = INSTANCE_VERSIONS[:-4:-1]
        name = query.get("api-version")
        if not name:
            return Reply(400, version_error_body(MISSING_VERSION, newest))
        if name not in INSTANCE_VERSIONS:
            return Reply(400, version_error_body(BAD_VERSION, newest))
        node: Any = instance_document(self._instance)
        for part in path[len(INSTANCE) :].strip("/").split("/"):
            if not part:
                continue
            match = (
                next((k for k in node if k.lower() == part), None)
                if isinstance(node, dict)
                else None
            )
            if match is None:
                return Reply(404, error_body(NOT_FOUND))
            node = node[match]
        if query.get("format", "json").lower() == "text" and not isinstance(node, dict | list):
            return Reply(200, str(node).encode(), content_type=TEXT)
        return Reply(200, msgspec.json.encode(node))
