"""A metadata endpoint that misbehaves on demand, on loopback, for the agent's fault tests.

``mode`` picks the answer to GET /metadata/scheduledevents: ``ok`` (the document, with
ETag and 304), ``500``, ``410``, ``429``, ``garbage`` (200 with a body that is no JSON),
or ``refuse`` (nothing listens: connection refused). POSTs (approvals) are recorded: each
POST's ids in ``posts``, every id approved in ``approvals``. A POST naming an id of
``refused`` is 400 and approves none of its ids, as the endpoint does with an id the VM
may not approve.
/metadata/instance answers 404, so agents take their name from the configuration.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FaultServer"]


class FaultServer:
    def __init__(self) -> None:
        self.mode = "ok"
        self.incarnation = 1
        self.events: list[dict[str, Any]] = []
        self.approvals: list[str] = []
        self.posts: list[list[str]] = []
        self.refused: set[str] = set()
        self.answers: list[str] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self.port = 0
        self._listen()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def set_events(self, events: list[dict[str, Any]]) -> None:
        with self._lock:
            self.events = events
            self.incarnation += 1

    def set_mode(self, mode: str) -> None:
        if mode == "refuse" and self._server is not None:
            self._close()
        elif mode != "refuse" and self._server is None:
            self._listen()
        self.mode = mode

    def _listen(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None):
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if not self.path.startswith("/metadata/scheduledevents"):
                    self._reply(404, b'{"error": "Not found"}')
                    return
                mode = owner.mode
                if mode == "refuse":  # a kept-alive connection from before: drop it unanswered
                    self.close_connection = True
                    return
                owner.answers.append(mode)
                if mode == "ok":
                    with owner._lock:
                        tag = f'"{owner.incarnation}"'
                        doc = {"DocumentIncarnation": owner.incarnation, "Events": owner.events}
                    if self.headers.get("If-None-Match") == tag:
                        self._reply(304, b"", {"ETag": tag})
                    else:
                        self._reply(200, json.dumps(doc).encode(), {"ETag": tag})
                elif mode == "garbage":
                    self._reply(200, b"<html><body>Service Unavailable</body></html>")
                else:
                    status = int(mode)
                    self._reply(status, json.dumps({"error": f"injected {status}"}).encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                ids = [r["EventId"] for r in body.get("StartRequests", [])]
                with owner._lock:
                    owner.posts.append(ids)
                    bad = owner.refused.intersection(ids)
                    if not bad:
                        owner.approvals += ids
                if bad:
                    self._reply(400, json.dumps({"error": f"not yours: {min(bad)}"}).encode())
                    return
                self._reply(200, b"")

            def log_message(self, *args: Any) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def _close(self) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()
        self._server = None

    def close(self) -> None:
        if self._server is not None:
            self._close()
