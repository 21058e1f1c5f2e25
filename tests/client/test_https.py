"""An https:// endpoint (a proxy of the metadata endpoint, a test rig) goes over the
client's own HTTP/1.1 and the standard library's ssl, both twins alike: the server's
certificate is verified against the trusted CAs (``SSL_CERT_FILE``), and one not trusted
is a connection that failed, naming the URL."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from forewarn.arm.tls import TlsFiles, ensure_certificates
from forewarn.client import AsyncScheduledEventsClient, EndpointUnreachable, ScheduledEventsClient

DOCUMENT = {"DocumentIncarnation": 4, "Events": []}


class Endpoint(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    posts: list[bytes] = []

    def _answer(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        assert self.headers["Metadata"] == "true"
        self._answer(json.dumps(DOCUMENT).encode())

    def do_POST(self) -> None:
        type(self).posts.append(self.rfile.read(int(self.headers["Content-Length"])))
        self._answer(b"")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def tls(tmp_path: Path) -> TlsFiles:
    return ensure_certificates(tmp_path, "127.0.0.1")


@pytest.fixture
def https_url(tls: TlsFiles) -> Iterator[str]:
    Endpoint.posts = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls.certificate, tls.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_both_twins_ask_an_https_endpoint(
    https_url: str, tls: TlsFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tls.ca))
    with ScheduledEventsClient(https_url) as client:
        assert client.get().incarnation == 4
        client.approve("E1")
        assert client.get().incarnation == 4  # the same kept-alive connection, or a new one

    async def both() -> int:
        async with AsyncScheduledEventsClient(https_url) as aclient:
            await aclient.approve("E2")
            return (await aclient.get()).incarnation

    import asyncio

    assert asyncio.run(both()) == 4
    assert Endpoint.posts == [b'{"StartRequests":[{"EventId":"E1"}]}',
                              b'{"StartRequests":[{"EventId":"E2"}]}']  # fmt: skip


def test_a_certificate_not_trusted_is_refused(
    https_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = ensure_certificates(tmp_path / "other", "127.0.0.1")  # another CA
    monkeypatch.setenv("SSL_CERT_FILE", str(other.ca))
    with (
        ScheduledEventsClient(https_url, max_retries=0) as client,
        pytest.raises(EndpointUnreachable, match="certificate verify failed") as caught,
    ):
        client.get()
    assert https_url in str(caught.value) and caught.value.status is None
    assert Endpoint.posts == []
