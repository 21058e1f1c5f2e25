"""Serving a recorded sequence of documents to one VM, with its original timing (scaled).

``ReplayEndpoint`` is a stand-in for ``forewarn.imds.Endpoint``: the same transport serves
it (``serve_endpoint`` takes any object with ``handle(request) -> Reply``), and it keeps the
request rules clients depend on (the Metadata header, api-version, ETag/304, approval
bodies, the rate limit, instance metadata), but the documents are the recorded ones,
rendered for the api-version asked for, played on a clock of their own: the
recording's time runs ``time_scale`` times faster than the wall clock, from its first
document. Approvals are checked and reported, never acted on: a replay is fixed.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
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
    SUPPORTED_VERSIONS,
    TOO_MANY_REQUESTS,
    StartRequestError,
    error_body,
    format_rfc1123,
    lookup_version,
    parse_not_before,
    parse_start_requests,
    version_error_body,
)
from forewarn.contract.limits import RATE_LIMIT
from forewarn.fabric.clock import Clock, monotonic, wall_time
from forewarn.fleet.topology import VM
from forewarn.imds import INSTANCE_VERSIONS, ImdsSettings, RateLimiter, Reply, Request
from forewarn.imds.endpoint import normalise_path
from forewarn.imds.instance import INSTANCE, instance_reply
from forewarn.replay.recorded import Frame, RecordingError
from forewarn.replay.versions import Rendered, refusal, renderable_frames

__all__ = ["ReplayEndpoint", "shift_not_before"]

log = logging.getLogger(__name__)

SCHEDULED_EVENTS = "/metadata/scheduledevents"
VERSIONS = "/metadata/versions"
_RATE_LIMITED = Reply(429, error_body(TOO_MANY_REQUESTS))

ApprovalCallback = Callable[[Frame, list[str]], None]


def shift_not_before(body: bytes, to_wall: Callable[[float], float]) -> bytes:
    """``body`` with every NotBefore moved by ``to_wall`` (recording time → wall time), so
    that a replayed event is as far ahead of the client's clock as it was when recorded.
    Everything else, key order included, is kept. A date that cannot be moved (past year
    9999) raises RecordingError naming it."""
    document: dict[str, Any] = msgspec.json.decode(body)
    for event in document.get("Events") or ():
        text = event.get("NotBefore") if isinstance(event, dict) else None
        try:
            when = parse_not_before(text) if isinstance(text, str) and text else None
        except ValueError:  # a date the wire model keeps as text: replayed as recorded
            when = None
        if when is not None:
            try:
                event["NotBefore"] = format_rfc1123(to_wall(when.timestamp()))
            except (OverflowError, ValueError, OSError):
                raise RecordingError(
                    f"NotBefore {text!r} moved to today's clock falls after year 9999; "
                    "replay it with --recorded-times"
                ) from None
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
    """The frames one api-version is served, searchable by time."""

    def __init__(self, rendered: Sequence[Rendered]) -> None:
        self.times = [r.frame.t for r in rendered]
        self.replies = [
            Reply(200, r.body, ((b"etag", b'"%d"' % r.frame.incarnation),)) for r in rendered
        ]
        self.frames = [r.frame for r in rendered]

    def at(self, now: float) -> tuple[Frame, Reply] | None:
        index = bisect.bisect_right(self.times, now) - 1
        if index < 0:
            return None
        return self.frames[index], self.replies[index]


def _timelines(
    frames: Sequence[Frame], shift: Callable[[Frame, bytes], bytes] | None = None
) -> dict[str, _Timeline | Reply]:
    """Every supported api-version's timeline, or the 400 that refuses it."""
    out: dict[str, _Timeline | Reply] = {}
    for name in SUPPORTED_VERSIONS:
        version = lookup_version(name)
        assert version is not None
        rendered = renderable_frames(frames, version)
        if not rendered:
            out[name] = Reply(400, error_body(refusal(frames, version)))
        elif shift is None:
            out[name] = _Timeline(rendered)
        else:
            out[name] = _Timeline([Rendered(r.frame, shift(r.frame, r.body)) for r in rendered])
    return out


class ReplayEndpoint:
    """Answers every request as VM ``vm``, with the frame current on its clock.

    The clock tells recording time: it starts at the first frame's time, running
    ``time_scale`` times faster than the wall clock, when ``start()`` is called, or at the
    first request when ``on_first_request`` (a replay then begins when the VM's client
    does, whenever that is). Each api-version is served its own rendering of what was
    recorded (``versions.py``). ``shift_times`` moves each NotBefore so it keeps its
    distance from the moment the document is served (else the recorded dates are served
    as they are). ``rate_limit`` is the endpoint's (R8: requests per second, None: off).
    ``on_approve(frame, ids)`` hears each accepted approval.
    """

    def __init__(
        self,
        vm: str,
        frames: Sequence[Frame],
        *,
        time_scale: float = 1.0,
        shift_times: bool = True,
        on_first_request: bool = False,
        on_approve: ApprovalCallback | None = None,
        rate_limit: float | None = RATE_LIMIT,
    ) -> None:
        if not frames:
            raise ValueError("nothing to replay")
        self.vm = vm
        self.frames = tuple(frames)
        self.time_scale = time_scale
        self.settings = ImdsSettings(rate_limit=rate_limit)
        self._limiter = RateLimiter(rate_limit, monotonic) if rate_limit else None
        self.clock = Clock.virtual(start=frames[0].t)  # stands still until started
        self.started = asyncio.Event()
        self._shift_times = shift_times
        self._on_first_request = on_first_request
        self._on_approve = on_approve
        self._by_version = _timelines(self.frames)
        self._instance = VM(name=vm, scope_id=vm, host="replay", address="127.0.0.1")

    @property
    def waits_for_first_request(self) -> bool:
        """True when the replay starts with the first request, not at once."""
        return self._on_first_request

    def shifted(self, wall0: float) -> dict[str, _Timeline | Reply]:
        """The timelines with every NotBefore moved as if the replay started at ``wall0``
        (RecordingError, naming the line, when a date cannot be moved)."""
        recorded0 = self.frames[0].t

        def to_wall(recorded: float) -> float:
            return wall0 + (recorded - recorded0) / self.time_scale

        def shift(frame: Frame, body: bytes) -> bytes:
            try:
                return shift_not_before(body, to_wall)
            except RecordingError as exc:
                raise RecordingError(f"line {frame.line}: {exc}") from None

        return _timelines(self.frames, shift)

    def check_shift(self) -> None:
        """Raise RecordingError (naming the line) when ``shift_times`` cannot move a date
        to today's clock, so ``forewarn replay`` refuses before it serves anything."""
        if self._shift_times:
            self.shifted(wall_time())

    def start(self) -> None:
        """Start the replay's clock now (once)."""
        if self.started.is_set():
            return
        self.clock = Clock(rate=self.time_scale, start=self.frames[0].t)
        if self._shift_times:
            try:
                self._by_version = self.shifted(wall_time())
            except RecordingError as exc:  # checked at start-up; only a far later start
                log.warning("replaying the recorded dates: %s", exc)
        self.started.set()

    def current(self, api_version: str | None = None) -> Frame:
        """The frame a VM asking for ``api_version`` (default: the newest) gets now."""
        found = self._lookup(api_version or SUPPORTED_VERSIONS[-1])
        if isinstance(found, Reply):
            raise LookupError(found.body.decode())
        return found[0]

    def _lookup(self, api_version: str) -> tuple[Frame, Reply] | Reply:
        timeline = self._by_version[api_version]
        if isinstance(timeline, Reply):
            return timeline
        found = timeline.at(self.clock.now())
        if found is None:
            first = timeline.times[0] - self.frames[0].t
            return Reply(
                400,
                error_body(
                    f"this replay has no document api-version {api_version} can show before "
                    f"+{first:g} s of the recording; ask for another version"
                ),
            )
        return found

    def handle(self, request: Request) -> Reply:
        """Answer one request (never raises for anything a client can send)."""
        if self._on_first_request and not self.started.is_set():
            self.start()
        path = normalise_path(request.path) or ""  # each segment decoded, as the endpoint's
        scheduled = path == SCHEDULED_EVENTS
        instance = path == INSTANCE or path.startswith(INSTANCE + "/")
        if not (scheduled or instance or path == VERSIONS):
            return Reply(404, error_body(NOT_FOUND))
        if self._limiter is not None and not self._limiter.allow(self.vm):
            return _RATE_LIMITED
        query = {k.lower(): v for k, v in parse_qsl(request.query.decode("latin-1"))}
        headers = dict(request.headers)
        if not scheduled:
            if request.method != "GET":
                return Reply(405, error_body(METHOD_NOT_ALLOWED), ((b"allow", b"GET"),))
            if b"x-forwarded-for" in headers:
                return Reply(400, error_body(FORWARDED_NOT_ALLOWED))
            if headers.get(b"metadata", b"").strip().lower() != b"true":
                return Reply(400, error_body(METADATA_HEADER_MISSING))
            if path == VERSIONS:
                return Reply(200, msgspec.json.encode({"apiVersions": list(INSTANCE_VERSIONS)}))
            return instance_reply(path, self._instance, query)
        if b"x-forwarded-for" in headers:
            return Reply(400, error_body(FORWARDED_NOT_ALLOWED))
        metadata = headers.get(b"metadata", b"").strip().lower() == b"true"
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
        found = self._lookup(version.name)
        if isinstance(found, Reply):
            return found
        frame, reply = found
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
