"""Webhook destinations are loopback unless the operator allows more (``--eventgrid-allow``,
``FOREWARN_SERVE_EVENTGRID_ALLOW``): a refused one is answered 400 saying so, and never
connected to (a listening socket's backlog stays empty), through the control API and ARM;
an allowed one is validated and delivered to; a host name is resolved, and refused when
an address it gives is not allowed."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from forewarn.cli import main
from forewarn.eventgrid.destinations import DestinationRefused, Destinations, GuardedTransport
from tests.arm.conftest import SUBSCRIPTION, start_arm_server
from tests.eventgrid.conftest import FLEET, GridServer
from tests.eventgrid.webhook import Behaviour, webhook
from tests.support.serveconfig import effective as settings
from tests.support.serveconfig import serve_runner

HINT = "--eventgrid-allow"


def _local_address() -> str:
    """An address of this machine off loopback (skips where there is none)."""
    for probe in ("192.0.2.1", "10.255.255.1", "8.8.8.8"):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.connect((probe, 9))  # UDP: picks the source address, sends nothing
            except OSError:
                continue
            address = str(s.getsockname()[0])
            if not address.startswith("127."):
                return address
    pytest.skip("this machine has no address off loopback")


@pytest.fixture
def listening() -> Iterator[tuple[str, socket.socket]]:
    """A socket listening off loopback that is never accepted from: a connection attempt
    would sit in its backlog."""
    address = _local_address()
    sock = socket.socket()
    sock.bind((address, 0))
    sock.listen(8)
    sock.setblocking(False)
    try:
        yield f"http://{address}:{sock.getsockname()[1]}/hook", sock
    finally:
        sock.close()


def _nothing_connected(sock: socket.socket) -> bool:
    try:
        conn, _ = sock.accept()
    except BlockingIOError:
        return True
    conn.close()
    return False


def test_a_destination_off_loopback_is_refused_without_a_connection(
    tmp_path: Path, listening: tuple[str, socket.socket]
) -> None:
    url, sock = listening
    arm = start_arm_server(tmp_path, FLEET, extra=("--time-scale", "100"))
    try:
        grid = GridServer(arm)
        r = grid.subscribe("elsewhere", url)
        assert r.status_code == 400, r.text
        message = r.json()["error"]
        assert "refused" in message and "loopback" in message and HINT in message, message
        assert "nothing was sent" in message
        with arm.https() as http:
            r = http.put(
                f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.EventGrid"
                "/eventSubscriptions/elsewhere",
                params={"api-version": "2025-04-01"},
                headers={"Authorization": "Bearer x"},
                json={"properties": {"destination": {
                    "endpointType": "WebHook", "properties": {"endpointUrl": url}}}},
            )  # fmt: skip
        assert r.status_code == 400, r.text
        assert "refused" in r.json()["error"]["message"]
        assert _nothing_connected(sock)  # not even a TCP handshake: nothing to learn
        assert grid.server.control("GET", "/api/v1/eventgrid/subscriptions").json() == []
        assert grid.deliveries() == []
        with webhook() as (loopback, hook):  # loopback is allowed by default
            assert (
                grid.subscribe("here", loopback.replace("127.0.0.1", "localhost")).status_code
                == 201
            )
            (handshake,) = hook.received
            assert handshake.headers["host"].startswith("localhost:")  # the URL's name kept
    finally:
        arm.server.stop()


def test_an_allowed_network_is_validated_and_delivered_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    address = _local_address()
    monkeypatch.setenv("FOREWARN_SERVE_EVENTGRID_ALLOW", f"hooks.invalid {address}/32")
    arm = start_arm_server(tmp_path, FLEET, extra=("--time-scale", "100"))
    try:
        grid = GridServer(arm)
        with webhook(Behaviour(), host=address) as (url, hook):
            assert url.startswith(f"http://{address}:")
            r = grid.subscribe("allowed", url)
            assert r.status_code == 201, r.text
            grid.trigger("user-reboot", "pub")
            (got,) = hook.wait(1)
            assert got.properties()["EventStatus"] == "Scheduled"
    finally:
        arm.server.stop()


@pytest.mark.parametrize(
    ("url", "resolves_to"),
    [
        ("http://167772161/hook", "10.0.0.1"),  # a number inet_aton reads: resolved first
        ("http://0x0a.1/hook", "10.0.0.1"),
        ("http://0.0.0.0:80/hook", "0.0.0.0"),
        ("http://[::ffff:10.0.0.1]/hook", "10.0.0.1"),
        ("http://[fd00::5]/hook", "fd00::5"),
    ],
)
async def test_a_name_or_number_giving_an_address_not_allowed_is_refused(
    url: str, resolves_to: str
) -> None:
    with pytest.raises(DestinationRefused, match="refused") as caught:
        await Destinations().check_url(url)
    assert resolves_to in str(caught.value)
    await Destinations([resolves_to]).check_url(url)  # allowed when the operator says so


async def test_the_transport_sends_nothing_to_a_refused_destination() -> None:
    class Recorder(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self.sent: list[httpx.Request] = []

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            self.sent.append(request)
            return httpx.Response(200)

    inner = Recorder()
    transport = GuardedTransport(Destinations(), inner)
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(DestinationRefused):
            await client.post("http://192.0.2.7/hook", json=[])
        assert inner.sent == []
        r = await client.post("http://localhost:8080/hook", json=[])  # pinned to what was checked
    assert r.status_code == 200
    (sent,) = inner.sent
    assert sent.url.host in ("127.0.0.1", "::1") and sent.headers["host"] == "localhost:8080"


def test_allow_entries_come_from_flags_env_and_config_file_and_bad_ones_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = serve_runner(tmp_path, monkeypatch)

    def effective(*args: str, env: dict[str, str] | None = None) -> Any:
        return settings(runner, *args, env=env)["eventgrid_allow"]

    assert effective() == []
    assert effective("--eventgrid-allow", "10.1.0.0/16", "--eventgrid-allow", "hooks.example") == [
        "10.1.0.0/16", "hooks.example",
    ]  # fmt: skip
    env = {"FOREWARN_SERVE_EVENTGRID_ALLOW": "fd00::/8 192.0.2.9"}
    assert effective(env=env) == ["fd00::/8", "192.0.2.9"]
    (tmp_path / "serve.yaml").write_text("eventgrid_allow: [hooks.example]\n")
    assert effective("--config", "serve.yaml") == ["hooks.example"]
    for entry in ("10.0.0.0/33", "http://x", "", "a b", "1.2.3"):
        result = runner.invoke(main, ["serve", "--eventgrid-allow", entry, "--print-config"])
        assert result.exit_code == 2, (entry, result.output)
        assert "--eventgrid-allow" in result.output and "Traceback" not in result.output
