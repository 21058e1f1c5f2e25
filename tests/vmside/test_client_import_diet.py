"""What the VM commands' client work loads (issue 31): in a fresh interpreter, the blocking
client reads a document, approves an event, gets a refusal and the contract writes a date
as ``events --url``, ``approve --url`` and ``watch`` do, and ``discover`` reads a lease;
none of it loads a third-party module, the email package, ipaddress or urllib.parse,
random, the idna codec, ssl or asyncio. ``discover`` loads pathlib, and with it
urllib.parse and ipaddress, only for a lease it found. A retry then loads random: only
a retry does.

Behaviour, not timing: each step's result is checked, so a step that failed early cannot
pass for one that loaded little.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

EVENT_ID = "602D9444-D2CD-49C7-8624-8643E7171297"
DOCUMENT = {
    "DocumentIncarnation": 2,
    "Events": [{
        "EventId": EVENT_ID, "EventStatus": "Scheduled", "EventType": "Reboot",
        "ResourceType": "VirtualMachine", "Resources": ["web-0"],
        "NotBefore": "Mon, 19 Sep 2016 18:29:47 GMT", "Description": "", "EventSource": "Platform",
        "DurationInSeconds": -1,
    }],
}  # fmt: skip

#: Never loaded by the client's work on a VM command's path.
ABSENT = ("msgspec", "email", "email.utils", "tenacity", "ipaddress", "urllib.parse", "random",
          "encodings.idna", "asyncio", "httpx", "decimal", "typing_extensions", "calendar",
          "forewarn.client.aio", "forewarn.client.recording", "forewarn.contract.render",
          "forewarn.contract.startrequests", "pathlib", "ssl")  # fmt: skip

SCRIPT = """
import json, sys

def loaded():
    return sorted(sys.modules)

from forewarn.client import BadRequestError, ScheduledEventsClient
from forewarn.contract import format_rfc1123

out = {}
url, lease, no_lease = sys.argv[1:4]
with ScheduledEventsClient(url, api_version="2020-07-01", local_address="127.0.0.1",
                           backoff=0.0, backoff_max=0.0) as client:
    document = client.get()
    event = document.events[0]
    when = format_rfc1123(event.not_before.timestamp())
    out["event"] = [event.event_id, str(event.event_type), when]
    client.approve(event.event_id)
    try:
        client.approve("unknown")
    except BadRequestError as exc:
        out["refused"] = exc.error
    out["after_approve"] = loaded()
    from forewarn.client import discover
    out["not_discovered"] = discover([no_lease]).url
    out["after_discover"] = loaded()
    out["discovered"] = str(discover([no_lease, lease]).lease_file)
    out["retried"] = client.get().incarnation  # the endpoint answers 503 once first
    out["after_retry"] = loaded()
print(json.dumps(out))
"""


class Endpoint(BaseHTTPRequestHandler):
    """The document on GET (a 503 to the second), 200 to an approval of a known event, the
    endpoint's 400 to another."""

    protocol_version = "HTTP/1.1"
    approvals: list[bytes] = []
    gets = 0

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        assert self.path == "/metadata/scheduledevents?api-version=2020-07-01", self.path
        type(self).gets += 1
        if type(self).gets == 2:  # the script's second GET (after discover): retried
            self._answer(503, b'{"error":"busy"}')
            return
        self._answer(200, json.dumps(DOCUMENT).encode())

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).approvals.append(body)
        if EVENT_ID.encode() in body:
            self._answer(200, b"")
        else:
            self._answer(400, b'{"error":"Bad request. Event id unknown is not found."}')

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    Endpoint.approvals, Endpoint.gets = [], 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_client_on_a_vm_commands_path_loads_only_what_it_needs(
    endpoint: str, tmp_path: Path
) -> None:
    lease, no_lease = tmp_path / "dhclient.leases", tmp_path / "dhclient.eth1.leases"
    lease.write_text("lease {\n  option unknown-245 a8:3f:81:10;\n}\n")
    no_lease.write_text("lease {\n  option routers 10.0.0.1;\n}\n")
    ran = subprocess.run([sys.executable, "-c", SCRIPT, endpoint, str(lease), str(no_lease)],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout)
    assert out["event"] == [EVENT_ID, "Reboot", "Mon, 19 Sep 2016 18:29:47 GMT"]
    assert out["refused"] == "Bad request. Event id unknown is not found."
    assert Endpoint.approvals == [
        b'{"StartRequests":[{"EventId":"%s"}]}' % EVENT_ID.encode(),
        b'{"StartRequests":[{"EventId":"unknown"}]}',
    ]
    assert out["not_discovered"] == "http://169.254.169.254"
    assert out["discovered"] == str(lease)  # a Path: pathlib loads now, with a lease found
    for step in ("after_approve", "after_discover"):
        assert [name for name in ABSENT if name in out[step]] == [], step
    assert (out["retried"], Endpoint.gets) == (2, 3)
    assert "random" in out["after_retry"]  # a retry, and only a retry
    assert "tenacity" not in out["after_retry"]


def test_http1_imports_nothing_else_of_the_client() -> None:
    ran = subprocess.run(
        [sys.executable, "-c",
         "import sys, forewarn.client.http1; print(' '.join(sorted(sys.modules)))"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    ours = [name for name in ran.stdout.split() if name.startswith("forewarn")]
    assert ours == ["forewarn", "forewarn.client", "forewarn.client.http1",
                    "forewarn.client.origin", "forewarn.client.urlparts", "forewarn.contract",
                    "forewarn.contract.lazynames"]  # fmt: skip
