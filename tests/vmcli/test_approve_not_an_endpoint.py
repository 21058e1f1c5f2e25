"""``forewarn approve --url`` against something that is not a Scheduled Events endpoint (a
captive portal's HTML page, a truncated document, another service answering 200 to
anything): it says so, exits 1 and posts nothing, never "approved on"."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support.cli import run_cli

EVENT_ID = "12345678-ABCD-4EF0-8123-456789ABCDEF"
HTML = b"<!doctype html><html><body><h1>Welcome to the proxy</h1></body></html>"
TRUNCATED = b'{"DocumentIncarnation": 1, "Events": [{"EventId": "' + EVENT_ID.encode()
OTHER_EVENTS = b'{"DocumentIncarnation": 1, "Events": []}'


class Hostile:
    """An HTTP server answering every GET and POST with 200 and ``body``; it keeps the
    method of each request."""

    def __init__(self) -> None:
        self.body = b""
        self.methods: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                outer.methods.append(self.command)
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                self.send_response(200)
                self.send_header("Content-Type", "text/html" if b"<" in outer.body else
                                 "application/json")  # fmt: skip
                self.send_header("Content-Length", str(len(outer.body)))
                self.end_headers()
                self.wfile.write(outer.body)

            do_GET = do_POST = _answer

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


@pytest.fixture
def hostile() -> Iterator[Hostile]:
    server = Hostile()
    try:
        yield server
    finally:
        server.close()


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (HTML, "{url} is not a Scheduled Events endpoint: it answered 200 with "),
        (TRUNCATED, "{url} is not a Scheduled Events endpoint: it answered 200 with "),
        (OTHER_EVENTS, f"not in the document of {{url}}: {EVENT_ID} (nothing approved)"),
    ],
    ids=["html-page", "truncated-json", "document-without-the-event"],
)
def test_approve_refuses_what_is_not_the_endpoint_and_posts_nothing(
    hostile: Hostile, body: bytes, said: str
) -> None:
    hostile.body = body
    result = run_cli(["approve", EVENT_ID, "--url", hostile.url])
    line = result.assert_one_error_line(said.format(url=hostile.url))
    assert line.endswith(" (nothing approved)"), line
    if body != OTHER_EVENTS:
        assert "answered 200 with the document is not JSON" in line, line
    assert "approved on" not in result.stdout
    assert hostile.methods == ["GET"]  # the document was asked for; no StartRequests sent


def test_approve_posts_once_the_document_lists_the_event(hostile: Hostile) -> None:
    hostile.body = (
        b'{"DocumentIncarnation": 1, "Events": [{"EventId": "' + EVENT_ID.lower().encode()
        + b'", "EventStatus": "Scheduled", "EventType": "Reboot", "ResourceType": '
        b'"VirtualMachine", "Resources": ["web-0"], "NotBefore": "", "Description": "", '
        b'"EventSource": "User", "DurationInSeconds": -1}]}'
    )  # fmt: skip
    result = run_cli(["approve", EVENT_ID, "--url", hostile.url])
    assert (result.code, result.stderr) == (0, "")
    assert result.stdout == f"approved on {hostile.url}: {EVENT_ID}\n"
    assert hostile.methods == ["GET", "POST"]  # ids compare whatever their case
