"""A real webhook in the test process: records every request it gets and answers as told
(the validation handshake, failures for the first N notifications, silence)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    method: str
    headers: dict[str, str]
    body: bytes
    at: float

    def json(self) -> Any:
        return json.loads(self.body)

    def properties(self) -> dict[str, Any]:
        """The scheduled event's fields in a notification of one event (Event Grid schema)."""
        (item,) = self.json()
        props: dict[str, Any] = item["data"]["resourceInfo"]["properties"]
        return props


def subscription_body(
    name: str, url: str, schema: str = "EventGridSchema", **props: Any
) -> dict[str, Any]:
    """What creates a subscription of ``name`` to the webhook at ``url``."""
    return {
        "name": name,
        "properties": {
            "destination": {"endpointType": "WebHook", "properties": {"endpointUrl": url}},
            "eventDeliverySchema": schema,
            **props,
        },
    }


@dataclass
class Behaviour:
    """How the webhook answers."""

    validate: str = "echo"  # echo | wrong | manual | refuse
    allow_origin: str | None = "eventgrid.azure.net"  # CloudEvents OPTIONS answer
    fail_first: int = 0  # notifications answered 500 before the first 200
    status: int = 500
    #: Called with each notification before it is answered, whatever the answer (a slow
    #: webhook), and after a 200 (what a controller does once it has taken the event).
    before_answer: Callable[[Received], None] | None = None
    after_answer: Callable[[Received], None] | None = None
    #: Called with each validation handshake before it is answered (a slow one).
    before_validate: Callable[[Received], None] | None = None
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def notifications(self) -> list[Received]:
        with self.lock:
            return [r for r in self.received if r.method == "POST" and _notification(r)]

    def wait(self, count: int, timeout: float = 30.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.notifications()
            if len(got) >= count:
                return got
            time.sleep(0.05)
        raise AssertionError(f"{len(self.notifications())} notifications, expected {count}")


def _notification(r: Received) -> bool:
    return r.headers.get("aeg-event-type") != "SubscriptionValidation"


def _handler(behaviour: Behaviour) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _record(self) -> Received:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            got = Received(
                self.command, {k.lower(): v for k, v in self.headers.items()}, body,
                time.monotonic(),
            )  # fmt: skip
            with behaviour.lock:
                behaviour.received.append(got)
            return got

        def _answer(
            self, status: int, body: Any = None, headers: dict[str, str] | None = None
        ) -> None:
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_OPTIONS(self) -> None:
            self._record()
            if behaviour.allow_origin is None:
                self._answer(405)
            else:
                self._answer(200, headers={"WebHook-Allowed-Origin": behaviour.allow_origin})

        def do_POST(self) -> None:
            got = self._record()
            if got.headers.get("aeg-event-type") == "SubscriptionValidation":
                if behaviour.before_validate is not None:
                    behaviour.before_validate(got)
                code = got.json()[0]["data"]["validationCode"]
                if behaviour.validate == "echo":
                    self._answer(200, {"validationResponse": code})
                elif behaviour.validate == "wrong":
                    self._answer(200, {"validationResponse": "not-the-code"})
                elif behaviour.validate == "manual":
                    self._answer(200)
                else:
                    self._answer(403)
                return
            with behaviour.lock:
                seen = sum(1 for r in behaviour.received if _notification(r) and r.method == "POST")
            if behaviour.before_answer is not None:
                behaviour.before_answer(got)
            if seen <= behaviour.fail_first:
                self._answer(behaviour.status)
                return
            self._answer(200)
            if behaviour.after_answer is not None:
                behaviour.after_answer(got)

    return Handler


class _Server(ThreadingHTTPServer):
    request_queue_size = 512  # 150 handshakes at once are all accepted, none reset


@contextmanager
def webhook(
    behaviour: Behaviour | None = None, host: str = "127.0.0.1"
) -> Iterator[tuple[str, Behaviour]]:
    """``(url, behaviour)`` of a webhook listening on ``host`` (loopback by default)."""
    behaviour = behaviour or Behaviour()
    server = _Server((host, 0), _handler(behaviour))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}/hook", behaviour
    finally:
        server.shutdown()
        server.server_close()
