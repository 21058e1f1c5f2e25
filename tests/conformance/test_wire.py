"""The kit's wire waits long for the first answer on each path (switching Scheduled Events
on may take two minutes on Azure, whatever else answered before), then not."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from forewarn.conformance import wire
from forewarn.conformance.wire import Wire


class _Slow(BaseHTTPRequestHandler):
    """Answers /metadata/instance at once, /metadata/scheduledevents after a second."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/metadata/scheduledevents"):
            time.sleep(1.0)
        body = b'{"DocumentIncarnation":1,"Events":[]}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def slow() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    server.handle_error = lambda request, address: None  # type: ignore[method-assign]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_first_answer_of_each_path_gets_the_long_timeout(
    slow: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wire, "TIMEOUT", 0.3)
    monkeypatch.setattr(wire, "FIRST_TIMEOUT", 5.0)
    kit = Wire(slow, rate=100)
    quick = kit.send("6.instance", "GET", "/metadata/instance?api-version=2021-02-01")
    assert quick.answer is not None and quick.answer.status == 200
    # another path, slow: its first answer is waited for, though the endpoint answered
    first = kit.send("R3.versions", "GET", "/metadata/scheduledevents?api-version=2020-07-01")
    assert first.answer is not None and first.answer.status == 200, first.error
    assert first.reused  # on the kept-alive connection
    # once that path answered, the short timeout applies to it
    again = kit.send("R3.versions", "GET", "/metadata/scheduledevents?api-version=2019-08-01")
    assert again.answer is None and again.error is not None and "timed out" in again.error
    kit.close()
