"""The ARM listener: its own HTTPS socket and uvicorn server beside the endpoint and the
control API, started and stopped by the composition root with one call each."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from forewarn.admission import Budget, Gate, GuardedProtocol, Pool, guarded
from forewarn.admission.guard import HEADER_TIMEOUT
from forewarn.arm.app import ArmApp
from forewarn.arm.resources import ArmFleet
from forewarn.arm.tls import TlsFiles, ensure_certificates
from forewarn.eventgrid import EventGrid
from forewarn.fabric import Fabric
from forewarn.imds.tokens import TokenSigner

__all__ = ["ArmListener", "ArmSettings", "serve_arm"]


@dataclass(frozen=True, slots=True)
class ArmSettings:
    """What the ARM listener needs: where to listen, the token (None: any), the client
    secret the identity routes require (None: the token, when there is one), where the
    CA lives. The subscription and resource group are the fleet's (``Topology.azure``)."""

    host: str
    port: int
    ca_dir: Path
    token: str | None = None
    #: Seconds from a connection's accept to its TLS handshake and first request head.
    header_timeout: float = HEADER_TIMEOUT
    client_secret: str | None = None


class _Server(uvicorn.Server):
    """Leaves signal handling to the composition root."""

    @contextlib.contextmanager
    def capture_signals(self):  # type: ignore[no-untyped-def]
        yield


@dataclass
class ArmListener:
    """A running ARM listener (or none, when not configured)."""

    url: str | None = None
    tls: TlsFiles | None = None
    app: ArmApp | None = None
    _server: _Server | None = None
    _task: asyncio.Task[None] | None = None
    _sock: socket.socket | None = None

    async def close(self) -> None:
        if self._server is None or self._task is None:
            return
        self._server.should_exit = True
        # A TLS client that keeps its connection open without answering close_notify
        # would hold the shutdown for asyncio's 30 s: give connections a moment, then go.
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(self._task), 2.0)
        self._server.force_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        if self._sock is not None:
            self._sock.close()


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port} (ARM): {exc.strerror}") from None
    return sock


async def serve_arm(
    fabric: Fabric,
    settings: ArmSettings | None,
    announce: Callable[[str], None] = print,
    eventgrid: EventGrid | None = None,
    pool: Pool | None = None,
    signer: TokenSigner | None = None,
) -> ArmListener:
    """Start serving ARM for ``fabric`` (nothing when ``settings`` is None); ``announce``
    gets the line that says where, and which CA file a client must trust. ``pool``: the
    connections it shares with the process's other API listeners (None: a pool of the
    API listeners' share of the open files to itself)."""
    if settings is None:
        return ArmListener()
    tls = ensure_certificates(settings.ca_dir, settings.host)
    fleet = ArmFleet(fabric.topology)
    app = ArmApp(
        fabric,
        fleet,
        token=settings.token,
        client_secret=settings.client_secret,
        eventgrid=eventgrid,
        signer=signer,
    )
    sock = _listen(settings.host, settings.port)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls.certificate, tls.key)
    if pool is None:
        pool = Pool(Budget.of_process().api_connections)
    # TLS is started by the protocol, after admission and within the head's deadline
    # (``admission/guard.py``), not by uvicorn's server: so no ``ssl_*`` here.
    gate = Gate(pool, header_timeout=settings.header_timeout, tls=context)
    config = uvicorn.Config(
        app.asgi,  # a client hanging up mid-request: ArmApp answers it, no traceback
        http=guarded(GuardedProtocol, gate),
        lifespan="off",
        access_log=False,
        log_level="warning",
        server_header=False,
    )
    server = _Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]), name="forewarn-arm")
    while not server.started and not task.done():
        await asyncio.sleep(0.01)
    if task.done():
        sock.close()
        task.result()  # surfaces a failure to start
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    url = f"https://{shown}:{port}"
    announce(
        f"forewarn: ARM on {url} (subscription {fleet.subscription}, resource group "
        f"{fleet.resource_group}); trust {tls.ca} (connection_verify / REQUESTS_CA_BUNDLE)"
    )
    return ArmListener(url, tls, app, server, task, sock)
