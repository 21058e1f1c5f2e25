"""A client that hangs up in the middle of its request body is a normal event for a
server: no traceback in the log (there was one per hang-up), and the next client is
served. A real ``forewarn serve`` with ARM; raw TLS sockets that send half a body."""

from __future__ import annotations

import socket
import ssl
import time
from pathlib import Path

from tests.arm.conftest import GROUP, SUBSCRIPTION, start_arm_server

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


def test_five_clients_hanging_up_mid_body_log_no_traceback(tmp_path: Path) -> None:
    arm = start_arm_server(tmp_path)
    try:
        host, port = arm.url.removeprefix("https://").rsplit(":", 1)
        context = ssl.create_default_context(cafile=arm.ca)
        for method, path in HANGUPS:
            with context.wrap_socket(
                socket.create_connection((host, int(port)), timeout=10), server_hostname=host
            ) as sock:
                sock.sendall(
                    f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer x\r\n"
                    "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
                    '{"query": "maintenanceres'.encode()
                )
                time.sleep(0.1)  # the server is reading the body when the client goes
        with arm.https() as http:  # the next client is served
            r = http.post(
                "/providers/Microsoft.ResourceGraph/resources",
                params={"api-version": "2021-03-01"},
                json={"query": "maintenanceresources | count"},
                headers={"Authorization": "Bearer x"},
            )
        assert r.status_code == 200, r.text
        time.sleep(1.0)  # generous: each traceback was written as its hang-up was seen
        log = "\n".join(arm.server.banner)
        assert "Traceback" not in log, log[-3000:]
        assert "ClientDisconnect" not in log and "Exception in ASGI" not in log, log[-3000:]
    finally:
        arm.server.stop()
