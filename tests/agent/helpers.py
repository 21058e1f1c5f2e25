"""Helpers of the agent tests: events as the client parses them, configs, small servers."""

from __future__ import annotations

import json
import ssl
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from forewarn.client import Event, parse_document

__all__ = ["RecordingWebhook", "event", "recording_webhook", "write"]


def event(
    event_id: str = "A1B2C3D4-0000-0000-0000-000000000001",
    *,
    event_type: str = "Reboot",
    status: str = "Scheduled",
    resources: tuple[str, ...] = ("web-0",),
    not_before: float | None = None,
    source: str = "Platform",
    duration: int = -1,
    description: str = "maintenance",
    **extra: Any,
) -> Event:
    """A client ``Event``, parsed from the wire form as the agent gets it."""
    raw = {
        "EventId": event_id,
        "EventStatus": status,
        "EventType": event_type,
        "ResourceType": "VirtualMachine",
        "Resources": list(resources),
        "NotBefore": formatdate(not_before, usegmt=True) if not_before else "",
        "Description": description,
        "EventSource": source,
        "DurationInSeconds": duration,
        **extra,
    }
    doc = parse_document(json.dumps({"DocumentIncarnation": 1, "Events": [raw]}))
    return doc.events[0]


def write(path: Path, text: str) -> Path:
    """Write dedented ``text`` to ``path``; returns the path."""
    path.write_text(textwrap.dedent(text))
    return path


class RecordingWebhook:
    """What a webhook receiver got: one (path, headers, JSON body) per POST."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses  # answered in order; the last one repeats
        self.requests: list[tuple[str, dict[str, str], Any]] = []
        self.url = ""

    def next_status(self) -> int:
        return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]


@contextmanager
def recording_webhook(
    statuses: list[int] | None = None, tls: tuple[Path, Path] | None = None
) -> Iterator[RecordingWebhook]:
    """An HTTP receiver on loopback that records each POST and answers ``statuses``;
    HTTPS with ``tls`` (its certificate and key files)."""
    hook = RecordingWebhook(statuses or [200])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"null")
            hook.requests.append((self.path, dict(self.headers.items()), body))
            status = hook.next_status()
            self.send_response(status)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    scheme = "http"
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    hook.url = f"{scheme}://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hook
    finally:
        server.shutdown()
        server.server_close()
