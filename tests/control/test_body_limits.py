"""Oversized bodies and strings on the control API, sent for real over a socket: refused
with 413 before the body is read, or 400 naming the field and its limit; nothing changes,
and no error echoes what was sent in full."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest

from forewarn.control import ControlApp
from forewarn.control.body_limit import MAX_BODY
from forewarn.control.dashboard import ScenarioHook
from forewarn.control.schemas import DESCRIPTION_MAX, NAME_MAX
from forewarn.fabric import Fabric, NotFoundError
from tests.control.conftest import observe
from tests.support.fabrics import make_fabric
from tests.support.liveserver import live_server, raw_request

JSONH = [("Host", "127.0.0.1"), ("Content-Type", "application/json")]
OPS = "/api/v1/operations"
RUNS = "/api/v1/scenarios/runs"


class _Scenarios(ScenarioHook):
    """A scenario engine that knows one name (what it was asked is what it saw)."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def names(self) -> list[str]:
        return ["drill"]

    def start(self, name: str, control_url: str) -> dict[str, Any]:
        if name != "drill":
            raise NotFoundError(f"no scenario called {name!r}")
        self.started.append(name)
        return {"name": name, "status": "running"}

    def runs(self) -> list[dict[str, Any]]:
        return []


@pytest.fixture
def fabric() -> Fabric:
    return make_fabric()


def _head(port: int, path: str, length: int, extra: str = "") -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    conn.sendall(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"{extra}Content-Length: {length}\r\n\r\n".encode()
    )
    return conn


def _read_all(conn: socket.socket) -> bytes:
    data = b""
    try:
        while chunk := conn.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data


def test_a_declared_100_mb_body_is_refused_413_before_a_byte_is_sent(fabric: Fabric) -> None:
    before = observe(fabric)
    with live_server(ControlApp(fabric, scenarios=_Scenarios())) as port:
        for path in (OPS, RUNS):
            conn = _head(port, path, 100 * 1024 * 1024)  # the head only: no body follows
            started = time.monotonic()
            answer = _read_all(conn)
            conn.close()
            assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
            assert f"at most {MAX_BODY} bytes".encode() in answer
            assert time.monotonic() - started < 5  # answered, not waited for a body
    assert observe(fabric) == before


def test_a_chunked_body_past_the_bound_is_refused_while_it_streams(fabric: Fabric) -> None:
    before = observe(fabric)
    with live_server(ControlApp(fabric)) as port:
        conn = socket.create_connection(("127.0.0.1", port), timeout=10)
        conn.sendall(
            f"POST {OPS} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n".encode()
        )
        piece = b'{"kind": "user-reboot", "description": "' + b"x" * (256 * 1024)
        sent = 0
        try:  # 16 MB offered; the server stops it after about 1 MB
            while sent < 16 * 1024 * 1024:
                conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                sent += len(piece)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = _read_all(conn)
        conn.close()
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < 8 * 1024 * 1024, "the whole body was taken in"
    assert observe(fabric) == before


@pytest.mark.parametrize(
    ("field", "body", "limit"),
    [
        ("$.description", {"kind": "user-reboot", "target": "web-0",
                           "description": "d" * (10 * 1024 * 1024 // 20)}, DESCRIPTION_MAX),
        ("$.target", {"kind": "user-reboot", "target": "v" * 100_000}, NAME_MAX),
        ("$.vms[0]", {"kind": "user-reboot", "vms": ["v" * (NAME_MAX + 1)]}, NAME_MAX),
        ("$.kind", {"kind": "k" * 5000, "target": "web-0"}, NAME_MAX),
    ],
)  # fmt: skip
def test_a_long_string_field_is_400_naming_the_field_and_the_limit(
    fabric: Fabric, field: str, body: dict[str, Any], limit: int
) -> None:
    import msgspec

    before = observe(fabric)
    with live_server(ControlApp(fabric)) as port:
        response = raw_request(port, "POST", OPS, JSONH, msgspec.json.encode(body))
    assert response.status_code == 400
    error = response.json()["error"]
    assert field in error and f"<= {limit}" in error, error
    assert len(response.body) < 2000
    assert observe(fabric) == before


def test_a_description_at_the_limit_is_served_in_vms_documents(fabric: Fabric) -> None:
    import msgspec

    body = {"kind": "user-reboot", "target": "web-0", "description": "d" * DESCRIPTION_MAX}
    with live_server(ControlApp(fabric)) as port:
        response = raw_request(port, "POST", OPS, JSONH, msgspec.json.encode(body))
    assert response.status_code == 201, response.body
    assert [e.description for e in fabric.events()] == ["d" * DESCRIPTION_MAX]


def test_an_unknown_scenario_name_is_not_echoed_back_whole(fabric: Fabric) -> None:
    hook = _Scenarios()
    with live_server(ControlApp(fabric, scenarios=hook)) as port:
        long = raw_request(port, "POST", RUNS, JSONH, b'{"name": "%s"}' % (b"n" * 900_000))
        unknown = raw_request(port, "POST", RUNS, JSONH, b'{"name": "%s"}' % (b"n" * NAME_MAX))
        path = raw_request(port, "GET", "/api/v1/" + "p" * 60_000, [("Host", "127.0.0.1")])
    assert long.status_code == 400
    assert "$.name" in long.json()["error"] and len(long.body) < 2000
    assert unknown.status_code == 404
    assert "no scenario called 'nnn" in unknown.json()["error"] and len(unknown.body) < 2000
    assert path.status_code == 404 and len(path.body) < 2000
    assert hook.started == []


def test_invalid_utf8_on_scenario_runs_is_400(fabric: Fabric) -> None:
    hook = _Scenarios()
    with live_server(ControlApp(fabric, scenarios=hook)) as port:
        response = raw_request(port, "POST", RUNS, JSONH, b'{"name": "dr\xffill"}')
    assert response.status_code == 400
    assert "UTF-8" in response.json()["error"]
    assert hook.started == []
