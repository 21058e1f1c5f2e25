"""A body refused before it is read (413) still lets its client read the refusal, on every
listener of a real ``forewarn serve``: ARM over TLS, the control API (operations and the
dashboard's scenario runs) and the metadata endpoint over plain HTTP, for bodies sent with
a Content-Length and chunked. The listener reads and discards the rest of the body within
bounds (``imds/lingering.py``) instead of closing under the client's writes; past the bound
it closes at once. Either way nothing changes."""

from __future__ import annotations

import socket
import ssl
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from forewarn.imds.lingering import LINGER_BYTES
from tests.arm.conftest import GROUP, SUBSCRIPTION, ArmServer, start_arm_server
from tests.support.marks import slow

MIB = 1024 * 1024
#: (bytes, chunked): the sizes that were refused unread before the fix.
CASES = [(2 * MIB, False), (5 * MIB, False), (3 * MIB, True)]
PIECE = b"x" * 65536


@dataclass(frozen=True)
class Listener:
    name: str
    host: str
    port: int
    method: str
    target: str
    headers: tuple[tuple[str, str], ...]
    tls: ssl.SSLContext | None = None

    @property
    def url(self) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://{self.host}:{self.port}{self.target}"


def _listeners(arm: ArmServer) -> list[Listener]:
    host, port = arm.url.removeprefix("https://").rsplit(":", 1)
    vm = (
        f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{GROUP}/providers/Microsoft.Compute"
        "/virtualMachines/solo?api-version=2024-07-01"
    )
    json = (("Content-Type", "application/json"),)
    control = arm.server.control_port
    return [
        Listener(
            "arm", host, int(port), "PATCH", vm, (("Authorization", "Bearer x"), *json),
            ssl.create_default_context(cafile=arm.ca),
        ),
        Listener("control", "127.0.0.1", control, "POST", "/api/v1/operations", json),
        Listener("scenario-runs", "127.0.0.1", control, "POST", "/api/v1/scenarios/runs", json),
        Listener(
            "metadata", "127.0.0.1", arm.server.imds_port, "POST",
            "/metadata/scheduledevents?api-version=2020-07-01", (("Metadata", "true"),),
        ),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def arm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArmServer]:
    server = start_arm_server(tmp_path_factory.mktemp("refusals"))
    yield server
    server.server.stop()


def _state(arm: ArmServer) -> Any:
    """What a refused request must not change: the platform's history and events, the VM
    as ARM shows it, the document the VM sees."""
    with arm.https() as client:
        vm = client.get(
            f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{GROUP}/providers/Microsoft.Compute"
            "/virtualMachines/solo?api-version=2024-07-01",
            headers={"Authorization": "Bearer x"},
        )
    assert vm.status_code == 200, vm.text
    return (
        arm.history(),
        arm.events(),
        vm.json(),
        arm.server.imds().json(),
    )


def _pieces(size: int) -> Iterator[bytes]:
    for _ in range(size // len(PIECE)):
        yield PIECE


def _urllib(listener: Listener, size: int, chunked: bool) -> str:
    """What a script sending the body with urllib sees: the status, or its error."""
    headers = dict(listener.headers)
    if chunked:
        headers["Transfer-Encoding"] = "chunked"
    request = urllib.request.Request(
        listener.url,
        data=_pieces(size) if chunked else b"x" * size,
        method=listener.method,
        headers=headers,
    )
    try:
        with urllib.request.urlopen(request, context=listener.tls, timeout=30) as response:
            return str(response.status)
    except urllib.error.HTTPError as exc:
        exc.read()
        return str(exc.code)
    except (OSError, urllib.error.URLError) as exc:
        return f"{type(exc).__name__}: {exc}"


def _connect(listener: Listener, timeout: float = 30) -> socket.socket:
    sock = socket.create_connection((listener.host, listener.port), timeout=timeout)
    if listener.tls is None:
        return sock
    return listener.tls.wrap_socket(sock, server_hostname=listener.host)


def _head(listener: Listener, framing: str) -> bytes:
    lines = [
        f"{listener.method} {listener.target} HTTP/1.1",
        f"Host: {listener.host}",
        *(f"{name}: {value}" for name, value in listener.headers),
        framing,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _read_to_end(sock: socket.socket) -> bytes:
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (ssl.SSLEOFError, ConnectionResetError):
        pass  # (the end, where the server closed without a TLS goodbye)
    return data


def _raw(listener: Listener, size: int, chunked: bool) -> str:
    """The whole request written on a socket, then the answer read: its status line, or
    the error that ended it."""
    try:
        with _connect(listener) as sock:
            if chunked:
                sock.sendall(_head(listener, "Transfer-Encoding: chunked"))
                for piece in _pieces(size):
                    sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                sock.sendall(b"0\r\n\r\n")
            else:
                sock.sendall(_head(listener, f"Content-Length: {size}") + b"x" * size)
            answer = _read_to_end(sock)
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"
    return answer.split(b"\r\n", 1)[0].decode("latin-1")


def _runs(arm: ArmServer, runs: int) -> None:
    """``runs`` of each client, listener and case, four at a time: every one reads 413."""
    before = _state(arm)
    jobs = [
        (send, listener, size, chunked)
        for listener in _listeners(arm)
        for size, chunked in CASES
        for send in (_urllib, _raw)
        for _ in range(runs)
    ]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda job: (job, job[0](*job[1:])), jobs))
    seen: dict[tuple[str, str, int, bool], Counter[str]] = {}
    for (send, listener, size, chunked), result in results:
        key = (send.__name__, listener.name, size, chunked)
        seen.setdefault(key, Counter())["413" if "413" in result else result] += 1
    wrong = {key: dict(counts) for key, counts in seen.items() if set(counts) != {"413"}}
    assert not wrong, wrong
    assert _state(arm) == before


def test_every_listener_lets_a_refused_client_read_its_413(arm: ArmServer) -> None:
    _runs(arm, 3)


@slow
def test_a_hundred_runs_of_each_refusal_all_read_their_413(arm: ArmServer) -> None:
    _runs(arm, 100)


def _answer(sock: socket.socket) -> bytes:
    """One answer off ``sock``, framed by its content-length."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, data
        body += chunk
    return head


def _send_body(sock: socket.socket, size: int) -> None:
    for _ in range(size // len(PIECE)):
        sock.sendall(PIECE)


@pytest.mark.parametrize("name", ["arm", "control", "scenario-runs", "metadata"])
def test_a_declared_body_past_the_bound_is_closed_at_once(arm: ArmServer, name: str) -> None:
    """Past ``LINGER_BYTES`` the refusal is sent and the connection closed without waiting
    for the body: what the client sends after it is refused by the closed socket. Within
    the bound the same head is answered and the body sent after the answer is still taken
    (read and dropped) until it is over."""
    listener = next(listener for listener in _listeners(arm) if listener.name == name)
    before = _state(arm)
    with _connect(listener) as within:
        within.sendall(_head(listener, f"Content-Length: {2 * MIB}"))
        assert _answer(within).startswith(b"HTTP/1.1 413")
        _send_body(within, 2 * MIB)  # (within LINGER_TIMEOUT of the answer)
        assert _read_to_end(within) == b""
    with _connect(listener) as beyond:
        beyond.sendall(_head(listener, f"Content-Length: {LINGER_BYTES + 1}"))
        assert _answer(beyond).startswith(b"HTTP/1.1 413")
        with pytest.raises(OSError):  # closed, not lingering: a reset or a broken pipe
            _send_body(beyond, LINGER_BYTES)
    assert _state(arm) == before


@pytest.mark.parametrize("name", ["arm", "control", "metadata"])
def test_a_chunked_body_past_the_bound_is_cut_off(arm: ArmServer, name: str) -> None:
    """A chunked body announces no total: it is read and dropped up to the bound, then the
    connection closes under the client's writes."""
    listener = next(listener for listener in _listeners(arm) if listener.name == name)
    before = _state(arm)
    offered = 8 * LINGER_BYTES
    sent = 0
    with _connect(listener) as sock:
        sock.sendall(_head(listener, "Transfer-Encoding: chunked"))
        with pytest.raises(OSError):  # (a reset, a broken pipe, TLS's EOF)
            while sent < offered:
                sock.sendall(b"%x\r\n%s\r\n" % (len(PIECE), PIECE))
                sent += len(PIECE)
            _read_to_end(sock)
            raise AssertionError("the whole body was read")
    assert sent < offered
    assert _state(arm) == before


def test_a_refused_body_sent_with_keep_alive_leaves_the_connection_usable(
    arm: ArmServer,
) -> None:
    """ARM answers 413 without ``connection: close``: the rest of the body is dropped and
    the next request on the connection is served."""
    listener = _listeners(arm)[0]
    with _connect(listener) as sock:
        sock.sendall(_head(listener, f"Content-Length: {2 * MIB}") + b"x" * 2 * MIB)
        assert _answer(sock).startswith(b"HTTP/1.1 413")
        get = _head(listener, "Content-Length: 0").replace(b"PATCH ", b"GET ", 1)
        sock.sendall(get)
        assert _answer(sock).startswith(b"HTTP/1.1 200")


def test_no_request_after_a_refused_body_is_served(arm: ArmServer) -> None:
    """The control API's 413 says ``connection: close``: a request pipelined after the
    refused body is read with it and dropped, never served."""
    listener = next(listener for listener in _listeners(arm) if listener.name == "control")
    before = _state(arm)
    valid = b'{"kind": "user-reboot", "target": "solo"}'
    with _connect(listener) as sock:
        sock.sendall(
            _head(listener, f"Content-Length: {2 * MIB}")
            + b"x" * 2 * MIB
            + _head(listener, f"Content-Length: {len(valid)}")
            + valid
        )
        answer = _read_to_end(sock)
    assert answer.startswith(b"HTTP/1.1 413") and answer.count(b"HTTP/1.1 ") == 1, answer
    assert _state(arm) == before
