"""A small metadata endpoint with the deviations of Microsoft's mock server
(Azure-Samples/scheduled-events-mock-server), for the kit to catch.

Faithful everywhere else (api-versions, X-Forwarded-For, ETags, fields by version,
instance metadata, 404/405), so the kit's findings must be exactly these:

- NotBefore in ISO 8601 (``2026-11-28T10:15:00Z``), not RFC 1123;
- no ``Metadata`` header check, on any path or method;
- a new EventId for every state: approving or advancing an event replaces it with a new
  one in the next state (Scheduled → Started → Completed → removed);
- only the first entry of StartRequests is looked at (and honoured).

Started events advance on their own after ``step`` seconds; Scheduled ones wait for an
approval. A test drives it with ``schedule``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from forewarn.contract import (
    BAD_VERSION,
    FORWARDED_NOT_ALLOWED,
    MISSING_VERSION,
    NEWEST_VERSIONS,
    lookup_version,
)

VM = "mockvm"
_NEXT = {"Scheduled": "Started", "Started": "Completed"}


@dataclass
class MockEvent:
    event_id: str
    event_type: str
    status: str
    not_before: float
    since: float = field(default_factory=time.monotonic)


class MockEndpoint:
    """The endpoint's state and its HTTP server (``url`` once started)."""

    def __init__(self, step: float = 1.0, vm: str = VM) -> None:
        self.step = step
        #: The VM it answers as; at 2017-03-01 it is underscored, whatever it is.
        self.vm = vm
        self.events: list[MockEvent] = []
        self.incarnation = 1
        self.lock = threading.Lock()
        self.approved: list[str] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._server.serve_forever, daemon=True),
            threading.Thread(target=self._tick, daemon=True),
        ]

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> MockEndpoint:
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    def schedule(self, *types: str, notice: float = 900.0) -> list[str]:
        """New Scheduled events of ``types`` for the VM; their ids."""
        with self.lock:
            new = [MockEvent(_new_id(), t, "Scheduled", time.time() + notice) for t in types]
            self.events += new
            self.incarnation += 1
        return [e.event_id for e in new]

    def _advance(self, event: MockEvent) -> None:
        """The next state, under a new EventId (the mock's way); Completed is removed."""
        self.events.remove(event)
        if event.status in _NEXT:
            self.events.append(
                MockEvent(_new_id(), event.event_type, _NEXT[event.status], event.not_before)
            )
        self.incarnation += 1

    def _tick(self) -> None:
        while not self._stop.wait(0.1):
            with self.lock:
                due = [e for e in self.events if e.status != "Scheduled"
                       and time.monotonic() - e.since >= self.step]  # fmt: skip
                for event in due:
                    self._advance(event)

    def approve(self, body: bytes) -> tuple[int, dict[str, Any] | None]:
        try:
            data = json.loads(body)
        except ValueError:
            return 400, {"error": "Request body is not valid JSON"}
        requests = data.get("StartRequests") if isinstance(data, dict) else None
        if not isinstance(requests, list) or not requests:
            return 400, {"error": "StartRequests is missing or empty"}
        first = requests[0]  # the others are never looked at
        event_id = first.get("EventId") if isinstance(first, dict) else None
        if not isinstance(event_id, str):
            return 400, {"error": "StartRequests[0] has no EventId"}
        with self.lock:
            match = [e for e in self.events if e.event_id.lower() == event_id.lower()]
            if not match:
                return 400, {"error": f"EventId {event_id} is unknown"}
            self.approved.append(event_id)
            if match[0].status == "Scheduled":
                self._advance(match[0])
        return 200, None

    def document(self, version: str) -> dict[str, Any]:
        api = lookup_version(version)
        assert api is not None
        with self.lock:
            events = []
            for e in self.events:
                if e.event_type not in api.event_types:
                    continue
                event: dict[str, Any] = {
                    "EventId": e.event_id, "EventStatus": e.status, "EventType": e.event_type,
                    "ResourceType": "VirtualMachine",
                    "Resources": ["_" + self.vm if api.underscore_iaas_names else self.vm],
                    "NotBefore": "" if e.status != "Scheduled" else datetime.fromtimestamp(
                        e.not_before, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                }  # fmt: skip
                if api.has_description:
                    event["Description"] = ""
                if api.has_event_source:
                    event["EventSource"] = "User"
                if api.has_duration:
                    event["DurationInSeconds"] = -1
                events.append(event)
            return {"DocumentIncarnation": self.incarnation, "Events": events}


def _new_id() -> str:
    return str(uuid.uuid4()).upper()


def _instance(vm: str) -> dict[str, Any]:
    return {"compute": {"name": vm, "vmId": str(uuid.uuid4()), "vmScaleSetName": "",
                        "platformUpdateDomain": "0", "platformFaultDomain": "0", "zone": "",
                        "location": "westeurope"}}  # fmt: skip


def _handler(mock: MockEndpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None,
                  text: str | None = None) -> None:  # fmt: skip
            data = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
            if text is not None:
                data = text.encode()
            self.send_response(status)
            kind = "text/plain; charset=utf-8" if text is not None else (
                "application/json; charset=utf-8")  # fmt: skip
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _route(self) -> None:
            parts = urlsplit(self.path)
            path = parts.path.lower().rstrip("/")
            query = dict(parse_qsl(parts.query))
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if "X-Forwarded-For" in self.headers:
                self._send(400, {"error": FORWARDED_NOT_ALLOWED})
                return
            if path == "/metadata/versions":
                self._send(200, {"apiVersions": ["2021-02-01"]})
                return
            if path.startswith("/metadata/instance"):
                if query.get("api-version") != "2021-02-01":
                    self._send(400, {"error": BAD_VERSION})
                elif path.endswith("/compute/name"):
                    self._send(200, text=mock.vm)
                else:
                    self._send(200, _instance(mock.vm))
                return
            if path != "/metadata/scheduledevents":
                self._send(404, {"error": "Not found"})
                return
            if self.command not in ("GET", "POST"):
                self._send(405, {"error": "Method not allowed"}, {"Allow": "GET, POST"})
                return
            version = query.get("api-version")
            if not version:
                self._send(400, {"error": MISSING_VERSION,
                                       "newest-versions": list(NEWEST_VERSIONS)})  # fmt: skip
                return
            if lookup_version(version) is None:
                self._send(400, {"error": BAD_VERSION,
                                       "newest-versions": list(NEWEST_VERSIONS)})  # fmt: skip
                return
            if self.command == "POST":
                status, answer = mock.approve(body)
                self._send(status, answer)
                return
            document = mock.document(version)
            tag = str(document["DocumentIncarnation"])
            wanted = (self.headers.get("If-None-Match") or "").removeprefix("W/").strip('"')
            if wanted == tag:
                self.send_response(304)
                self.send_header("ETag", f'"{tag}"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self._send(200, document, {"ETag": f'"{tag}"'})

        do_GET = do_POST = do_PUT = do_DELETE = _route

    return Handler
