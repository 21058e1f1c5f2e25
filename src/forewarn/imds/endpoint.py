"""The metadata endpoint's request handling, independent of any HTTP server.

``Endpoint.handle`` takes one parsed request and returns the reply: CONTRACT section 1
(request rules) and section 3 (approvals). Two transports feed it: the fast HTTP/1.1
protocol that ``forewarn serve`` runs (``protocol.py``) and an ASGI adapter for
in-process use (``app.py``). The hot path (GET of a cached document) is a handful of
dict look-ups, and every error body is pre-encoded. It reads the fabric and writes only
approvals and scope enablement (a scope's first request); it never exposes control
operations.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from urllib.parse import unquote_plus

import msgspec

from forewarn.contract import (
    BAD_VERSION,
    FORWARDED_NOT_ALLOWED,
    METADATA_HEADER_MISSING,
    METHOD_NOT_ALLOWED,
    MISSING_VERSION,
    NOT_FOUND,
    ApiVersion,
    StartRequestError,
    error_body,
    lookup_version,
    parse_start_requests,
    version_error_body,
)
from forewarn.contract.limits import RATE_LIMIT
from forewarn.fabric import EventNotVisible, Fabric, ScopeView, StoreUnavailable, monotonic
from forewarn.fleet import VM
from forewarn.imds.cache import DocumentCache
from forewarn.imds.faults import FaultBook
from forewarn.imds.identity import VmResolver
from forewarn.imds.instance import INSTANCE, INSTANCE_VERSIONS, instance_reply
from forewarn.imds.managed_identity import IDENTITY_TOKEN, ManagedIdentity
from forewarn.imds.messages import RATE_LIMITED, Reply, Request, Ticket
from forewarn.imds.ratelimit import Bucket, RateLimiter
from forewarn.imds.recorder import DocumentRecorder, RecordingCache
from forewarn.imds.segments import decoded_path
from forewarn.imds.tokens import TokenSigner
from forewarn.rehearsal import ReactionTracker, Track

log = logging.getLogger(__name__)

__all__ = ["MAX_BODY", "RULE_HEADERS", "TOO_LARGE", "Endpoint", "ImdsSettings"]

MAX_BODY = 64 * 1024

#: In a scaled-out fleet, the longest a front-end behind another one waits to catch up
#: before answering a VM that has seen a newer incarnation (If-None-Match), and the
#: longest one whose standing lapsed waits for the database to vouch for it again.
CATCH_UP_SECONDS = 2.0

#: The only request headers the rules look at (lower-case).
RULE_HEADERS = frozenset({b"metadata", b"x-forwarded-for", b"if-none-match"})

SCHEDULED_EVENTS = "/metadata/scheduledevents"
VERSIONS = "/metadata/versions"


@dataclass(frozen=True, slots=True)
class ImdsSettings:
    """Endpoint behaviour; defaults are the faithful ones except the first-call delay."""

    rate_limit: float | None = RATE_LIMIT
    first_call_delay: float = 0.0
    #: Seconds for a whole request head, and then for its body (a trickle does not reset it).
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    #: Open connections per client address (a fleet behind one NAT shares an address).
    max_connections_per_address: int = 256


class _NotSeenHereYet(Exception):
    """An approval names an event this front-end of a scaled-out fleet does not show."""

    def __init__(self, ids: list[str]) -> None:
        super().__init__("not seen here yet")
        self.ids = ids


class _Abort(Exception):
    """Carries an error reply out of deep request handling."""

    def __init__(self, reply: Reply) -> None:
        super().__init__(reply.status)
        self.reply = reply


_MISSING_VERSION = Reply(400, version_error_body(MISSING_VERSION))
_BAD_VERSION = Reply(400, version_error_body(BAD_VERSION))
_NO_HEADER = Reply(400, error_body(METADATA_HEADER_MISSING))
_FORWARDED = Reply(400, error_body(FORWARDED_NOT_ALLOWED))
_NOT_FOUND = Reply(404, error_body(NOT_FOUND))
_NOT_ALLOWED = Reply(405, error_body(METHOD_NOT_ALLOWED), ((b"allow", b"GET, POST"),))
_GET_ONLY = Reply(405, error_body(METHOD_NOT_ALLOWED), ((b"allow", b"GET"),))
TOO_LARGE = Reply(413, error_body("Request body too large"))
_APPROVED = Reply(200, b"")
_INTERNAL_ERROR = Reply(500, error_body("Internal server error"))
_VERSIONS = Reply(200, msgspec.json.encode({"apiVersions": list(INSTANCE_VERSIONS)}))
_NOT_VOUCHED = Reply(
    503,
    error_body(
        "This front-end has not heard from the fleet's database lately, so it cannot vouch "
        "for its Scheduled Events document; retry in a moment"
    ),
)


def normalise_path(raw: str) -> str | None:
    """Lower-case path without trailing slash, each segment decoded (``segments.py``);
    absolute-form targets lose scheme and host. None: a segment decodes to no name."""
    if raw[:1] != "/":
        scheme_end = raw.find("://")
        if scheme_end != -1:
            slash = raw.find("/", scheme_end + 3)
            raw = raw[slash:] if slash != -1 else "/"
    decoded = decoded_path(raw)
    if decoded is None:
        return None
    path = decoded.lower()
    if len(path) > 1 and path.endswith("/"):
        path = path.rstrip("/")
    return path


def _query(query_string: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    if not query_string:
        return out
    for part in query_string.decode("latin-1").split("&"):
        key, _, value = part.partition("=")
        if "%" in part or "+" in part:
            key, value = unquote_plus(key), unquote_plus(value)
        out.setdefault(key.lower(), value)
    return out


def _etag_matches(header: bytes, incarnation: int) -> bool:
    wanted = str(incarnation)
    for candidate in header.decode("latin-1").split(","):
        tag = candidate.strip()
        if tag.startswith(("W/", "w/")):
            tag = tag[2:]
        if tag == "*" or tag.strip('"') == wanted:
            return True
    return False


def _newest_etag(header: bytes) -> int:
    """The highest incarnation an If-None-Match names (0 when none is a number)."""
    newest = 0
    for candidate in header.decode("latin-1").split(","):
        tag = candidate.strip()
        if tag.startswith(("W/", "w/")):
            tag = tag[2:]
        tag = tag.strip('"')
        if tag.isascii() and tag.isdigit() and len(tag) < 19:
            newest = max(newest, int(tag))
    return newest


def _version(name: str | None) -> ApiVersion:
    if name is None or name == "":
        raise _Abort(_MISSING_VERSION)
    version = lookup_version(name)
    if version is None:
        raise _Abort(_BAD_VERSION)
    return version


@dataclass(frozen=True, slots=True)
class _Target:
    """What a request line says, parsed once per distinct (path, query)."""

    path: str
    route: str | None
    query: dict[str, str]
    version: ApiVersion | None
    version_error: Reply | None


def _target(raw_path: str, query_string: bytes) -> _Target:
    path = normalise_path(raw_path)
    route: str | None
    if path is None:  # not a path any route has: 404
        path, route = "", None
    elif path in (SCHEDULED_EVENTS, VERSIONS, IDENTITY_TOKEN):
        route = path
    elif path == INSTANCE or path.startswith(INSTANCE + "/"):
        route = INSTANCE
    else:
        route = None
    query = _query(query_string)
    version = error = None
    try:
        version = _version(query.get("api-version"))
    except _Abort as abort:
        error = abort.reply
    return _Target(path, route, query, version, error)


TARGET_CACHE_SIZE = 4096


def _not_tracked(vm: str, view: ScopeView, version: ApiVersion) -> None:
    """Served documents go unrecorded: no reaction tracker was given."""


class _Poll(Ticket):
    """A VM's poll that passed every rule that depends only on its bytes and its
    connection (route, api-version, headers, which VM): sent again, only the rules that
    depend on time and state are applied (``Endpoint.again``). Keeps the last document
    served, to hand it out again while the scope's view is the same object, and the VM's
    rate-limit bucket and reaction track (None: no limit, no tracker), so that a poll looks
    nothing up by the VM's name there (at 10,000 VMs a look-up in a table of 10,000 is a
    cache miss or two a poll)."""

    __slots__ = ("bucket", "if_none_match", "name", "reply", "track", "version", "view", "vm")

    def __init__(
        self,
        vm: VM,
        version: ApiVersion,
        if_none_match: bytes | None,
        bucket: Bucket | None,
        track: Track | None,
    ) -> None:
        self.vm = vm
        self.name = vm.name
        self.version = version
        self.if_none_match = if_none_match
        self.bucket = bucket
        self.track = track
        self.view: ScopeView | None = None
        self.reply: Reply | None = None


async def _later(wait: Awaitable[Reply], latency: float) -> Reply:
    """A deferred reply, ``latency`` seconds later than it would be sent."""
    reply = await wait
    return replace(reply, delay=reply.delay + latency)


class Endpoint:
    """The metadata service of one fabric."""

    def __init__(
        self,
        fabric: Fabric,
        settings: ImdsSettings | None = None,
        *,
        on_response: Callable[[str, int], None] | None = None,
        recorder: DocumentRecorder | None = None,
        reactions: ReactionTracker | None = None,
        faults: FaultBook | None = None,
        tokens: TokenSigner | None = None,
    ) -> None:
        """``on_response(route, status)`` sees every reply; route is a known path or "other".
        ``tokens`` signs the VMs' managed-identity tokens (default: the fleet's open signer,
        as when ARM accepts any bearer token).
        ``recorder`` is told every document served (``forewarn serve --record``);
        ``reactions`` too, to record who saw what when (the rehearsal report), and every
        faulted request. ``faults`` are the injected faults (default: a book of its own,
        empty: the faithful endpoint)."""
        self.fabric = fabric
        self.settings = settings or ImdsSettings()
        self._resolver = VmResolver(fabric.topology)
        self._deleted = fabric.deleted_names  # (a set held: no call per repeated poll)
        self._standing = fabric.standing  # (held too: read at every repeated poll)
        fabric.on_reload(self._hold_deleted)
        # Recording (``--record``) wraps the cache, so that without it the hot path is
        # exactly what it was.
        self._cache = DocumentCache() if recorder is None else RecordingCache(recorder)
        self._recording = recorder is not None  # every document served goes to the cache
        rate = self.settings.rate_limit
        self._limiter = RateLimiter(rate, monotonic) if rate else None
        self._on_response = on_response
        # Who saw what when: one slot store a poll (a no-op call without a tracker).
        self._served = _not_tracked if reactions is None else reactions.served
        self._reactions = reactions
        self._targets: dict[tuple[str, bytes], _Target] = {}
        if faults is None:
            faults = FaultBook(
                fabric.clock,
                rate_limit=rate,
                on_hit=None if reactions is None else reactions.faulted,
            )
        #: Injected faults (``faults.py``); while none is live, a request reads one flag.
        self.faults = faults
        names = fabric.topology.azure
        #: Signs the VMs' managed-identity tokens; ARM verifies with the same signer.
        self.tokens = tokens or TokenSigner.for_fleet(None, names.subscription)
        self._identity = ManagedIdentity(names, self.tokens)

    def _hold_deleted(self) -> None:
        """The fabric's whole state was replaced: hold its new set of deleted VMs."""
        self._deleted = self.fabric.deleted_names

    def handle(self, request: Request) -> Reply:
        """Answer one request (never raises for anything a client can send)."""
        key = (request.path, request.query)
        target = self._targets.get(key)
        if target is None:
            target = _target(request.path, request.query)
            if len(self._targets) < TARGET_CACHE_SIZE:
                self._targets[key] = target
        try:
            if self.faults.active:
                reply = self._faulted(target, request)
            else:
                reply = self._handle(target, request)
        except _Abort as abort:
            reply = abort.reply
        except Exception:  # a server fault: clients retry 500 (and only 500) with back-off
            log.exception("internal error answering %s %s", request.method, request.path)
            reply = _INTERNAL_ERROR
        if self._on_response is not None:
            self._on_response(target.route or "other", reply.status)
        return reply

    def ticket(self, request: Request) -> Ticket | None:
        """A ticket for a plain poll (GET of the document, every rule passed), which its
        connection sends again byte for byte: ``again`` answers those without parsing."""
        if request.method != "GET" or request.body:
            return None
        target = self._targets.get((request.path, request.query))
        if target is None or target.route != SCHEDULED_EVENTS or target.version is None:
            return None
        vm = self._resolver.resolve(request.client, request.local_port)
        if vm is None:
            return None
        metadata_ok = False
        if_none_match = None
        for name, value in request.headers:
            if name == b"metadata":
                metadata_ok = value.strip().lower() == b"true"
            elif name == b"x-forwarded-for":
                return None
            elif name == b"if-none-match":
                if_none_match = value
        if not metadata_ok or (if_none_match is not None and self.fabric.replicated):
            return None  # (a replicated 304 may have to wait for this front-end's view)
        bucket = None if self._limiter is None else self._limiter.bucket(vm.name)
        track = None if self._reactions is None else self._reactions.track(vm.name)
        return _Poll(vm, target.version, if_none_match, bucket, track)

    def again(self, ticket: Ticket) -> Reply | None:
        """The answer to a ticket's poll sent again: what ``handle`` would answer, for the
        rules that depend on time and state (deleted VM, faults: None, parse it; rate
        limit, first request, the scope's document, reaction tracking, metrics)."""
        poll: _Poll = ticket  # type: ignore[assignment]  # only ``ticket`` makes them
        fabric, standing = self.fabric, self._standing
        if (
            self.faults.active
            or poll.name in self._deleted
            or (standing.lapses and not standing.current())
        ):
            return None
        if poll.if_none_match is not None and fabric.replicated:
            return None
        limiter, bucket = self._limiter, poll.bucket
        try:
            if limiter is not None and bucket is not None and not limiter.take(bucket):
                reply = RATE_LIMITED
            elif (view := fabric.repeated_poll(poll.vm)) is not None and (
                view is poll.view and poll.reply is not None
            ):  # the same document as last time, nothing to write: the common poll
                if poll.track is not None:
                    poll.track.served(view, poll.version)
                reply = poll.reply
            else:
                reply = self._poll_again(poll, poll.vm, view)
        except Exception:  # as ``handle``: a server fault is a 500
            log.exception("internal error answering a repeated poll of %s", poll.name)
            reply = _INTERNAL_ERROR
        if self._on_response is not None:
            self._on_response(SCHEDULED_EVENTS, reply.status)
        return reply

    def _poll_again(self, poll: _Poll, vm: VM, view: ScopeView | None) -> Reply:
        """``again`` past the common case (``view``: the fabric's ``repeated_poll``)."""
        first = False
        if view is None:
            first = self.fabric.note_request(vm)
            view = self.fabric.view(vm.scope_id)
        if first and self.settings.first_call_delay:
            delay = self.settings.first_call_delay
            return self._document(view, vm, poll.version, poll.if_none_match, delay)
        if view is poll.view and poll.reply is not None:  # the same document as last time
            self._served(vm.name, view, poll.version)
            return poll.reply
        reply = self._document(view, vm, poll.version, poll.if_none_match, 0.0)
        if not self._recording:
            poll.view, poll.reply = view, reply
        return reply

    def _faulted(self, target: _Target, request: Request) -> Reply:
        """A request while faults are injected: the fault's answer, or the usual one
        (late, for a latency fault). A faulted request never reaches the platform."""
        vm = None
        if target.route is not None:
            vm = self._resolver.resolve(request.client, request.local_port)
        hit = None if vm is None or vm.name in self._deleted else self.faults.hit(vm)
        if hit is None:
            return self._handle(target, request)
        if hit.reply is not None:
            return hit.reply
        try:
            reply = self._handle(target, request)
        except _Abort as abort:
            reply = abort.reply
        if reply.wait is not None:
            return replace(reply, wait=_later(reply.wait, hit.latency))
        return replace(reply, delay=reply.delay + hit.latency)

    def _handle(self, target: _Target, request: Request) -> Reply:
        route = target.route
        if route is None:
            raise _Abort(_NOT_FOUND)
        vm = self._resolver.resolve(request.client, request.local_port)
        if vm is None or vm.name in self._deleted:
            raise _Abort(_NOT_FOUND)
        if (
            route == SCHEDULED_EVENTS
            and not self.fabric.standing.current()
            and (request.method != "POST" or self.fabric.leading)
        ):  # a scaled-out front-end that stopped for a while: its views (and, leading,
            # its lead) may be older than what VMs were shown elsewhere (a follower relays
            # an approval whatever its views are: the leader applies it if it still can)
            return Reply(200, b"", wait=self._once_vouched(target, request))
        if self._limiter is not None and not self._limiter.allow(vm.name):
            raise _Abort(RATE_LIMITED)
        method = request.method
        if route == SCHEDULED_EVENTS:
            if method != "GET" and method != "POST":
                raise _Abort(_NOT_ALLOWED)
        elif method != "GET":
            raise _Abort(_GET_ONLY)
        metadata_ok = False
        if_none_match = None
        for name, value in request.headers:
            if name == b"metadata":
                metadata_ok = value.strip().lower() == b"true"
            elif name == b"x-forwarded-for":
                raise _Abort(_FORWARDED)
            elif name == b"if-none-match":
                if_none_match = value
        if route != SCHEDULED_EVENTS:
            if route == IDENTITY_TOKEN:
                return self._identity.reply(vm, target.query, metadata_ok)
            if not metadata_ok:
                raise _Abort(_NO_HEADER)
            if route == VERSIONS:
                return _VERSIONS
            return instance_reply(target.path, vm, target.query, self.fabric.topology.azure)
        version = target.version
        if version is None:
            raise _Abort(target.version_error or _MISSING_VERSION)
        if not metadata_ok and (method == "GET" or version.post_needs_metadata_header):
            raise _Abort(_NO_HEADER)
        first = self.fabric.note_request(vm)
        delay = self.settings.first_call_delay if first else 0.0
        if method == "POST":
            try:
                self._approve(vm, request.body, version)
            except _NotSeenHereYet as pending:  # shown by a front-end ahead of this one
                later = self._approve_once_seen(vm, pending.ids, version, delay)
                return Reply(200, b"", wait=later)
            except _Abort as abort:
                if not delay:
                    raise
                raise _Abort(replace(abort.reply, delay=delay)) from None
            reply = Reply(200, b"", delay=delay) if delay else _APPROVED
            if self.fabric.writes_in_flight():  # answered once the approval is on disk
                return Reply(200, b"", wait=self._once_durable(reply))
            return reply
        view = self.fabric.view(vm.scope_id)
        if (
            if_none_match is not None
            and self.fabric.replicated
            and _newest_etag(if_none_match) > view.incarnation
        ):  # another front-end showed this VM a newer document: never answer an older one
            return Reply(200, b"", wait=self._caught_up(vm, version, if_none_match, delay))
        return self._document(view, vm, version, if_none_match, delay)

    def _document(
        self,
        view: ScopeView,
        vm: VM,
        version: ApiVersion,
        if_none_match: bytes | None,
        delay: float,
    ) -> Reply:
        reply = self._cache.reply(view, vm, version)
        self._served(vm.name, view, version)
        if if_none_match is not None and _etag_matches(if_none_match, view.incarnation):
            return Reply(304, b"", reply.headers, delay=delay)
        return replace(reply, delay=delay) if delay else reply

    async def _caught_up(
        self, vm: VM, version: ApiVersion, if_none_match: bytes, delay: float
    ) -> Reply:
        """The document once this front-end's view reached the incarnation the VM has
        seen elsewhere (a scaled-out fleet), or after ``CATCH_UP_SECONDS`` whatever it is."""
        wanted = _newest_etag(if_none_match)
        view = await self.fabric.view_at_least(vm.scope_id, wanted, CATCH_UP_SECONDS)
        return self._document(view, vm, version, if_none_match, delay)

    async def _once_vouched(self, target: _Target, request: Request) -> Reply:
        """The answer once the database vouched for this front-end again (``Standing``),
        or 503 after ``CATCH_UP_SECONDS``: never a document it cannot vouch for."""
        if not await self.fabric.standing.wait(CATCH_UP_SECONDS):
            return _NOT_VOUCHED
        try:
            reply = self._handle(target, request)
        except _Abort as abort:
            return abort.reply
        return reply if reply.wait is None else await reply.wait

    def _approve(self, vm: VM, body: bytes, version: ApiVersion) -> None:
        try:
            ids = parse_start_requests(body)
        except StartRequestError as exc:
            raise _Abort(Reply(400, error_body(str(exc)))) from None
        try:
            self.fabric.approve(vm, ids, event_types=version.event_types)
        except EventNotVisible as exc:
            if self.fabric.replicated:
                raise _NotSeenHereYet(ids) from None
            raise _Abort(Reply(400, error_body(str(exc)))) from None
        except StoreUnavailable as exc:
            raise _Abort(Reply(503, error_body(str(exc)))) from None

    async def _approve_once_seen(
        self, vm: VM, ids: list[str], version: ApiVersion, delay: float
    ) -> Reply:
        """In a scaled-out fleet, an approval of an event this front-end does not show yet
        (the VM saw it on another one) is checked again as the view catches up, for at most
        ``CATCH_UP_SECONDS``; then it is refused as on a single server."""
        deadline = monotonic() + CATCH_UP_SECONDS
        while True:
            incarnation = self.fabric.view(vm.scope_id).incarnation
            try:
                self.fabric.approve(vm, ids, event_types=version.event_types)
                break
            except EventNotVisible as exc:
                remaining = deadline - monotonic()
                if remaining <= 0:
                    return Reply(400, error_body(str(exc)), delay=delay)
                await self.fabric.view_at_least(vm.scope_id, incarnation + 1, remaining)
        await self.fabric.durable()
        return Reply(200, b"", delay=delay)

    async def _once_durable(self, reply: Reply) -> Reply:
        """``reply``, once every change made so far (this approval included) is durable;
        a failed write raises ``StoreUnavailable``, which the transports answer with 503."""
        await self.fabric.durable()
        return reply
