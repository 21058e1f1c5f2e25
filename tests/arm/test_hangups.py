"""A client that hangs up in the middle of its request body is a normal event for a
server: no traceback in the log (there was one per hang-up), and the next client is
served. A real ``forewarn serve`` with ARM; raw TLS sockets that send half a body to ARM,
plain ones to the control API (whose hang-ups were tracebacks too)."""

from __future__ import annotations

import socket
import ssl
import time
from pathlib import Path

from tests.arm.conftest import GROUP, SUBSCRIPTION, start_arm_server

CONTROL_HANGUPS = ["/api/v1/operations", "/api/v1/eventgrid/subscriptions", "/api/v1/faults"]
HANGUPS = [
    ("PUT", f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.EventGrid/eventSubscriptions"
            "/half?api-version=2025-04-01"),
    ("POST", "/providers/Microsoft.ResourceGraph/resources?api-version=2021-03-01"),
    ("POST", f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{GROUP}/providers/Microsoft.Compute"
             "/virtualMachines/solo/restart?api-version=2024-07-01"),
    ("PUT", f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.EventGrid/eventSubscriptions"
            "/half2?api-version=2025-04-01"),
    ("POST", "/providers/Microsoft.ResourceGraph/resources?api-version=2021-03-01"),
]  # fmt: skip


def _half_a_body(sock: socket.socket, method: str, path: str, host: str) -> None:
    sock.sendall(
        f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer x\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        '{"query": "maintenanceres'.encode()
    )
    time.sleep(0.1)  # the server is reading the body when the client goes


def test_clients_hanging_up_mid_body_log_no_traceback(tmp_path: Path) -> None:
    arm = start_arm_server(tmp_path)
    try:
        host, port = arm.url.removeprefix("https://").rsplit(":", 1)
        context = ssl.create_default_context(cafile=arm.ca)
        for method, path in HANGUPS:
            with context.wrap_socket(
                socket.create_connection((host, int(port)), timeout=10), server_hostname=host
            ) as sock:
                _half_a_body(sock, method, path, host)
        for path in CONTROL_HANGUPS:
            with socket.create_connection(("127.0.0.1", arm.server.control_port), 10) as plain:
                _half_a_body(plain, "POST", path, "127.0.0.1")
        with arm.https() as http:  # the next client is served
            r = http.post(
                "/providers/Microsoft.ResourceGraph/resources",
                params={"api-version": "2021-03-01"},
                json={"query": "maintenanceresources | count"},
                headers={"Authorization": "Bearer x"},
            )
        assert r.status_code == 200, r.text
        assert arm.server.control("GET", "/api/v1/operations").status_code == 200
        time.sleep(1.0)  # generous: each traceback was written as its hang-up was seen
        log = "\n".join(arm.server.banner)
        assert "Traceback" not in log, log[-3000:]
        assert "ClientDisconnect" not in log and "Exception in ASGI" not in log, log[-3000:]
    finally:
        arm.server.stop()
