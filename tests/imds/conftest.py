"""Fixtures for the metadata-endpoint tests: an in-process ImdsApp over a fabric.

Requests go through ``httpx.ASGITransport`` (the ``client`` tuple picks the asking VM) or,
when a test needs what httpx cannot send (a raw absolute-form path, a chosen local port,
a header value with surrounding blanks, a body in chunks), through ``call_asgi`` with a
hand-built ASGI scope.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from forewarn.fabric import (
    EventRecord,
    Fabric,
    OperationRecord,
    OperationRequest,
)
from forewarn.fleet import FleetSpec
from forewarn.imds import ImdsApp, ImdsSettings
from tests.support.fabrics import make_fabric

BASE_URL = "http://169.254.169.254"
SE = "/metadata/scheduledevents"
INSTANCE = "/metadata/instance"
VERSIONS_PATH = "/metadata/versions"
NEWEST = "2020-07-01"
INSTANCE_VERSION = "2021-02-01"


JSON_TYPE = "application/json; charset=utf-8"
TEXT_TYPE = "text/plain; charset=utf-8"

MISSING_VERSION_BODY = (
    b'{"error":"Bad request. api-version was not specified in the request. '
    b'For more information refer to aka.ms/azureimds",'
    b'"newest-versions":["2020-07-01","2019-08-01","2019-04-01"]}'
)
BAD_VERSION_BODY = (
    b'{"error":"Bad request. api-version is invalid or was not specified in the request. '
    b'For more information refer to aka.ms/azureimds",'
    b'"newest-versions":["2020-07-01","2019-08-01","2019-04-01"]}'
)
HEADER_BODY = b'{"error":"Bad request. Required metadata header not specified"}'
XFF_BODY = b'{"error":"Bad request. X-Forwarded-For header is not allowed"}'
RATE_BODY = b'{"error":"Too many requests"}'
METHOD_BODY = b'{"error":"Method not allowed"}'
NOT_FOUND_BODY = b'{"error":"Not found"}'

#: The built-in GPU scale set whose VMs each see only their own events.
GPU_SCOPE = {"kind": "scale_set", "name": "gpu", "vms": 2, "gpu": True, "fault_domains": 1}

_UNSET: Any = object()


def event_id(n: int) -> str:
    """The n-th deterministic event id (upper-case hex, so lower-casing changes it)."""
    return f"{n:08X}-AAAA-4BBB-8CCC-DDDDEEEEFFFF"


def compact(body: bytes) -> bytes:
    """``body`` re-encoded as compact JSON, keeping key order (equal iff it was compact)."""
    return json.dumps(json.loads(body), separators=(",", ":"), ensure_ascii=False).encode()


def assert_json_reply(response: httpx.Response, status: int, body: bytes) -> None:
    """Status, exact body, JSON content type and a matching content-length."""
    assert (response.status_code, response.content) == (status, body)
    assert response.headers["content-type"] == JSON_TYPE
    assert response.headers["content-length"] == str(len(body))


@dataclass
class RawResponse:
    """What an ASGI app sent back for one request."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes

    def header(self, name: str) -> str | None:
        """The (single) value of header ``name``, or None."""
        values = [v.decode("latin-1") for k, v in self.headers if k.decode().lower() == name]
        assert len(values) <= 1, f"header {name} sent {len(values)} times"
        return values[0] if values else None


async def call_asgi(
    app: Callable[..., Any],
    *,
    method: str = "GET",
    path: str = SE,
    query: bytes = b"api-version=" + NEWEST.encode(),
    headers: Iterable[tuple[bytes, bytes]] = ((b"metadata", b"true"),),
    client: tuple[str, int] | None = ("127.1.0.2", 50000),
    server: tuple[str, int] | None = ("169.254.169.254", 80),
    body: bytes | Sequence[bytes] = b"",
) -> RawResponse:
    """Call ``app`` once with a hand-built HTTP scope and collect what it sends."""
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": list(headers),
        "client": client,
        "server": server,
    }
    chunks = [body] if isinstance(body, bytes) else list(body)
    messages = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
        for i, chunk in enumerate(chunks)
    ]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        return {"type": "http.disconnect"}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(dict(message))

    await app(scope, receive, send)
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    return RawResponse(
        status=sent[0]["status"],
        headers=[(bytes(k), bytes(v)) for k, v in sent[0]["headers"]],
        body=sent[1].get("body", b""),
    )


@dataclass
class Imds:
    """An ImdsApp over a fabric, with helpers to ask it as a given VM."""

    fabric: Fabric
    app: ImdsApp

    # -------------------------------------------------------------- identities

    def address(self, vm: str) -> str:
        """The source address of VM ``vm``."""
        return self.fabric.topology.vms[vm].address

    def client(self, vm: str = "web-1", *, address: str | None = None) -> httpx.AsyncClient:
        """An httpx client that speaks as ``vm`` (or from ``address``)."""
        transport = httpx.ASGITransport(app=self.app, client=(address or self.address(vm), 50000))
        return httpx.AsyncClient(transport=transport, base_url=BASE_URL)

    # ---------------------------------------------------------------- requests

    async def request(
        self,
        method: str = "GET",
        path: str = SE,
        *,
        vm: str = "web-1",
        address: str | None = None,
        version: str | None = NEWEST,
        metadata: str | None = "true",
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
        json_body: Any = _UNSET,
    ) -> httpx.Response:
        """One request as ``vm``; ``version``/``metadata`` None leave them out."""
        query: dict[str, str] = {}
        if version is not None:
            query["api-version"] = version
        query.update(params or {})
        all_headers: dict[str, str] = {}
        if metadata is not None:
            all_headers["Metadata"] = metadata
        all_headers.update(headers or {})
        kwargs: dict[str, Any] = {"params": query, "headers": all_headers}
        if json_body is not _UNSET:
            kwargs["json"] = json_body
        elif content is not None:
            kwargs["content"] = content
        async with self.client(vm, address=address) as client:
            return await client.request(method, path, **kwargs)

    async def get(self, vm: str = "web-1", **kwargs: Any) -> httpx.Response:
        """GET the Scheduled Events document (or ``path=``) as ``vm``."""
        return await self.request("GET", vm=vm, **kwargs)

    async def post(self, vm: str, *ids: str, **kwargs: Any) -> httpx.Response:
        """POST ``{"StartRequests": [...]}`` for ``ids`` as ``vm``."""
        body = {"StartRequests": [{"EventId": i} for i in ids]}
        return await self.request("POST", vm=vm, json_body=body, **kwargs)

    async def document(self, vm: str = "web-1", version: str = NEWEST) -> dict[str, Any]:
        """The parsed document ``vm`` gets (asserting a 200)."""
        response = await self.get(vm, version=version)
        assert response.status_code == 200, response.content
        parsed: dict[str, Any] = response.json()
        return parsed

    async def raw(self, **kwargs: Any) -> RawResponse:
        """``call_asgi`` on this app."""
        return await call_asgi(self.app, **kwargs)

    # ------------------------------------------------------------ the platform

    def submit(self, kind: str, *vms: str, **fields: Any) -> OperationRecord:
        """Submit ``kind`` against ``vms``."""
        return self.fabric.submit(OperationRequest(kind=kind, vms=tuple(vms), **fields))

    def events_of(self, op: OperationRecord) -> list[EventRecord]:
        """The live events of ``op``, in creation order."""
        return [e for e in self.fabric.events() if e.operation_id == op.id]

    def only_event(self, op: OperationRecord) -> EventRecord:
        """The single live event of ``op``."""
        events = self.events_of(op)
        assert len(events) == 1, events
        return events[0]

    def event(self, event_id: str) -> EventRecord:
        """A live event by id, as the fabric keeps it."""
        return next(e for e in self.fabric.events() if e.id == event_id)

    def incarnation(self, scope_id: str = "web") -> int:
        """A scope's current DocumentIncarnation."""
        return self.fabric.view(scope_id).incarnation


ImdsFactory = Callable[..., Imds]


@pytest.fixture
def make_imds() -> ImdsFactory:
    """Build an endpoint over a fresh fabric (demo fleet, virtual clock at T0).

    Defaults suit most tests: every scope enabled and no rate limit, so a test can ask
    many times; the rate-limit and enablement tests pass the faithful settings.
    """

    def factory(
        spec: FleetSpec | None = None,
        *,
        rate_limit: float | None = None,
        first_call_delay: float = 0.0,
        **config: Any,
    ) -> Imds:
        ids = itertools.count(1)
        fabric = make_fabric(spec, new_id=lambda: event_id(next(ids)), **config)
        settings = ImdsSettings(rate_limit=rate_limit, first_call_delay=first_call_delay)
        return Imds(fabric, ImdsApp(fabric, settings))

    return factory


@pytest.fixture
def imds(make_imds: ImdsFactory) -> Imds:
    """The demo fleet behind an endpoint, every scope enabled, no rate limit."""
    return make_imds()


# ------------------------------------------------------------------ expected documents

#: Expected documents, one file per scenario and api-version (``test_golden_documents``
#: writes them with FOREWARN_WRITE_GOLDEN=1; each was reviewed against the contract).
GOLDEN = Path(__file__).parent / "golden"


def golden_document(scenario: str, version: str) -> bytes:
    """The exact document of ``scenario`` (see ``test_golden_documents``) at ``version``."""
    return (GOLDEN / scenario / f"{version}.json").read_bytes()


def reboot_document(version: str) -> bytes:
    """The exact document the web scope shows at ``version`` after ``reboot_web0``."""
    return golden_document("platform-reboot", version)


#: The web scope's document before anything happened.
EMPTY_WEB = golden_document("no-events", NEWEST)


@pytest.fixture
def reboot_web0(imds: Imds) -> str:
    """A platform reboot of web-0 (scope ``web``); returns its one event's id."""
    op = imds.submit("platform-reboot", "web-0")
    event = imds.only_event(op)
    assert event.id == event_id(1)
    return event.id
