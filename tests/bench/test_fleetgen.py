"""The Go load generator against scripted servers: connections, schedule, errors, approvals."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.loadgen import write_vms_file
from tests.bench.conftest import Script, ScriptedServer, canned

EMPTY = b'{"DocumentIncarnation":1,"Events":[]}'
PATH = b"/metadata/scheduledevents?api-version=2020-07-01"


def run(
    binary: Path, port: int, vms: Sequence[tuple[str, str, bool]], tmp: Path,
    seconds: float = 2, rate: float = 5,
) -> dict[str, Any]:  # fmt: skip
    listing = write_vms_file(tmp / "vms.txt", vms)
    out = subprocess.run(
        [str(binary), "-target", f"127.0.0.1:{port}", "-vms", str(listing),
         "-seconds", str(seconds), "-rate", str(rate), "-settle", "200ms", "-timeout", "3s"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert "fleetgen: ready start=" in out.stderr
    report: dict[str, Any] = json.loads(out.stdout)
    return report


def fleet(prefix: str, count: int, approvers: Sequence[int] = ()) -> list[tuple[str, str, bool]]:
    return [(f"{prefix}.{i + 1}", f"vm{i}", i in approvers) for i in range(count)]


def test_each_vm_polls_on_its_own_keepalive_connection_from_its_own_address(
    fleetgen: Path, scripted: Callable[[Script], ScriptedServer], tmp_path: Path
) -> None:
    server = scripted(lambda peer, head, body: canned(EMPTY))
    vms = fleet("127.77.0", 20)
    report = run(fleetgen, server.port, vms, tmp_path)
    assert report["offered"] == report["requests"] == 200  # 20 VMs x 5 Hz x 2 s
    assert report["statuses"] == {"200": 200}
    assert report["error_total"] == 0 and report["connected"] == 20
    assert sorted(c.peer for c in server.connections) == sorted(a for a, _, _ in vms)
    assert [len(c.requests) for c in server.connections] == [10] * 20
    first = server.connections[0].requests[0]
    assert first.startswith(b"GET " + PATH + b" HTTP/1.1\r\n")
    assert b"\r\nMetadata: true\r\n" in first
    assert 0 < report["latency"]["p50_ms"] <= report["latency"]["max_ms"] < 1000
    assert report["send_lag"]["count"] == 200
    # nobody hangs up while others still poll (disconnects would stall the last second)
    deadline = time.monotonic() + 5
    while any(c.closed_at is None for c in server.connections) and time.monotonic() < deadline:
        time.sleep(0.01)
    last_poll = max(c.arrived[-1] for c in server.connections)
    assert all(c.closed_at is not None and c.closed_at > last_poll for c in server.connections)


def test_a_stalled_server_delays_every_poll_due_during_the_stall(
    fleetgen: Path, scripted: Callable[[Script], ScriptedServer], tmp_path: Path
) -> None:
    """Open loop: polls due while the server's loop is blocked count from their due time,
    so a 600 ms stall shows on ~30 % of the polls, not only on the 10 in flight (5 %)."""
    seen = [0]

    def stall_once(peer: str, head: bytes, body: bytes) -> bytes:
        seen[0] += 1
        if seen[0] == 60:
            time.sleep(0.6)  # blocks the whole event loop, as a commit on it would
        return canned(EMPTY)

    server = scripted(stall_once)
    report = run(fleetgen, server.port, fleet("127.77.1", 10), tmp_path, rate=10)
    assert report["requests"] == 200 and report["error_total"] == 0
    assert report["latency"]["max_ms"] >= 550
    assert report["latency"]["p90_ms"] >= 150
    (stall, *_) = report["stalls"]  # the longest: one stop, the polls it held up
    assert stall["ms"] >= 550 and stall["requests"] >= 30
    # ...and the generator itself kept its schedule: the stall is not its own lag, and the
    # stall says so (its answers took the 600 ms, the generator was not late to send).
    assert report["send_lag"]["p50_ms"] < 20
    assert stall["answer_ms"] >= 550 and stall["lag_ms"] < 100


def test_approvers_post_start_requests_once_for_scheduled_events_that_list_them(
    fleetgen: Path, scripted: Callable[[Script], ScriptedServer], tmp_path: Path
) -> None:
    events = [
        {"EventId": "E-1", "EventStatus": "Scheduled", "Resources": ["vm1"]},
        {"EventId": "E-2", "EventStatus": "Started", "Resources": ["vm1"]},
        {"EventId": "E-3", "EventStatus": "Scheduled", "Resources": ["vm2"]},
    ]
    document = json.dumps({"DocumentIncarnation": 2, "Events": events}).encode()

    def script(peer: str, head: bytes, body: bytes) -> bytes:
        return canned(b"") if head.startswith(b"POST ") else canned(document)

    server = scripted(script)
    vms = fleet("127.77.2", 3, approvers=(0, 1))  # vm2 is listed but does not approve
    report = run(fleetgen, server.port, vms, tmp_path)
    posts = [
        (c.peer, head, body)
        for c in server.connections
        for head, body in zip(c.requests, c.bodies, strict=True)
        if head.startswith(b"POST ")
    ]
    assert len(posts) == 1
    peer, head, body = posts[0]
    assert peer == "127.77.2.2"  # vm1's own address
    assert head.startswith(b"POST " + PATH + b" HTTP/1.1\r\n") and b"Metadata: true" in head
    assert json.loads(body) == {"StartRequests": [{"EventId": "E-1"}]}
    assert report["approvals"]["sent"] == 1 and report["approvals"]["statuses"] == {"200": 1}
    assert report["statuses"] == {"200": 30}


def test_failures_are_counted_by_kind_and_the_vm_reconnects(
    fleetgen: Path, scripted: Callable[[Script], ScriptedServer], tmp_path: Path
) -> None:
    answers: dict[str, bytes | None] = {
        "127.77.3.1": None,  # closes without answering
        "127.77.3.2": b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n",
        "127.77.3.3": canned(b'{"error":"busy"}', "503 Service Unavailable"),
    }
    server = scripted(lambda peer, head, body: answers[peer])
    report = run(fleetgen, server.port, fleet("127.77.3", 3), tmp_path)
    assert report["errors"] == {"closed": 10, "protocol": 10}
    assert report["statuses"] == {"503": 10}
    assert report["offered"] == 30 and report["requests"] == 10
    # every failed poll dropped its connection and the next one connected again
    assert sum(1 for c in server.connections if c.peer != "127.77.3.3") == 20


def test_nothing_listening_is_connect_errors_not_a_hang(fleetgen: Path, tmp_path: Path) -> None:
    from bench.loadgen import free_port

    started = time.monotonic()
    report = run(fleetgen, free_port(), fleet("127.77.4", 3), tmp_path, seconds=1)
    assert report["connected"] == 0 and report["requests"] == 0
    assert report["errors"] == {"connect": 15}
    assert time.monotonic() - started < 20


def test_a_malformed_vm_list_is_refused_with_its_line(fleetgen: Path, tmp_path: Path) -> None:
    listing = tmp_path / "vms.txt"
    listing.write_text("127.77.5.1 vm0\n127.77.5.2 vm1 maybe\n", encoding="utf-8")
    out = subprocess.run(
        [str(fleetgen), "-vms", str(listing)], capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 2
    assert "vms.txt:2: expected ADDRESS NAME [approve]" in out.stderr
    assert out.stdout == ""
