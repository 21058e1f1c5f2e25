"""Dashboard streams nobody reads (a laptop asleep with the page open), against a real
``forewarn serve``: they are dropped, and they never hold up SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.serverproc import ServerProcess

FLEET = Path(__file__).resolve().parents[2] / "src/forewarn/fleet/fleets/thousand.yaml"


def _unread_stream(port: int) -> socket.socket:
    """Open ``GET /api/v1/stream`` with a tiny receive window, and never read."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    sock.connect(("127.0.0.1", port))
    sock.sendall(
        b"GET /api/v1/stream HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
        b"Accept: text/event-stream\r\n\r\n" % port
    )
    return sock


def _backlog(sock: socket.socket) -> int:
    """Bytes waiting, unread, in our receive buffer."""
    import fcntl
    import termios

    return int.from_bytes(fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0"), "little")


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _churn(server: ServerProcess, count: int) -> None:
    """Changes that every stream is sent (so unread ones fill up)."""
    for _ in range(count):
        op = server.control(
            "POST", "/api/v1/operations", json={"kind": "user-reboot", "target": "api-0"}
        )
        assert op.status_code in (201, 409), op.text
        for event in server.control("GET", "/api/v1/events").json():
            server.control("POST", f"/api/v1/events/{event['id']}/cancel", json={})


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path / "f.db", ["--fleet", str(FLEET), "--enablement", "always"])
    proc.start(timeout=60)
    yield proc
    proc.stop()


#: 50,000 VMs: a snapshot of some 5 MB, more than the kernel buffers for a connection, so
#: the server itself holds the rest (what a reader that fell behind costs).
BIG_FLEET = """\
location: westeurope
hosts: 100
scopes:
  - {kind: scale_set, name: big, vms: 50000, placement_groups: 50, update_domains: 5}
"""


def test_sigterm_ends_the_server_promptly_with_unread_streams_open(tmp_path: Path) -> None:
    fleet = tmp_path / "big.yaml"
    fleet.write_text(BIG_FLEET)
    server = ServerProcess(tmp_path / "f.db", ["--fleet", str(fleet)]).start(timeout=120)
    assert server.proc is not None
    socks = [_unread_stream(server.control_port) for _ in range(3)]
    try:
        deadline = time.monotonic() + 60  # until each stream's snapshot is stuck
        while time.monotonic() < deadline and not all(_backlog(s) > 0 for s in socks):
            time.sleep(0.2)
        time.sleep(2.0)
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        code = server.proc.wait(timeout=60)
        took = time.monotonic() - started
    finally:
        for sock in socks:
            sock.close()
        server.stop()
    assert code == 0
    assert took < 4.0, f"SIGTERM took {took:.1f}s with unread dashboard streams open"


def _dropped(sock: socket.socket) -> bool:
    """The server ended this stream (end of stream or reset), after whatever it held."""
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        return True
    except BlockingIOError:
        return False  # still open
    return True


def test_unread_streams_are_dropped_and_release_their_descriptors(
    server: ServerProcess,
) -> None:
    assert server.proc is not None
    pid = server.proc.pid
    before = _open_fds(pid)
    socks = [_unread_stream(server.control_port) for _ in range(300)]
    try:
        deadline = time.monotonic() + 90  # a loaded machine accepts slowly
        while _open_fds(pid) < before + 250 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _open_fds(pid) >= before + 250, "the streams were not accepted"
        _churn(server, 20)
        deadline = time.monotonic() + 40  # the stall limit is 5 s
        while _open_fds(pid) > before + 10 and time.monotonic() < deadline:
            time.sleep(0.5)
        held = _open_fds(pid) - before
        # dropped, not closed politely: the peer sees a reset (or the end of the stream);
        # a stream the kernel still held in the backlog above is accepted, then dropped,
        # a little later: look again until every one is gone or the stall limit has passed
        open_streams = list(socks)
        for sock in open_streams:
            sock.setblocking(False)
        while open_streams and time.monotonic() < deadline + 10:
            open_streams = [sock for sock in open_streams if not _dropped(sock)]
            if open_streams:
                time.sleep(0.5)
        dropped = len(socks) - len(open_streams)
    finally:
        for sock in socks:
            sock.close()
    assert held <= 10, f"{held} descriptors still held by 300 unread streams"
    assert dropped == 300
    # and the control API still answers
    assert server.control("GET", "/healthz").status_code == 200
