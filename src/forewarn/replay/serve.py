"""Running a replay: bind the endpoint's listeners, serve, and tell each document's turn."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import Callable, Sequence

from forewarn.imds import serve_endpoint
from forewarn.replay.player import ReplayEndpoint
from forewarn.replay.recorded import Frame

__all__ = ["bind", "describe", "run_replay"]


def bind(addresses: Sequence[tuple[str, int]]) -> list[socket.socket]:
    """Listening sockets on ``addresses`` (all or none: OSError names the one taken)."""
    sockets: list[socket.socket] = []
    try:
        for host, port in addresses:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # NODELAY
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
                sock.listen(4096)  # clients queue from now on, before the loop serves
            except OSError as exc:
                raise OSError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def describe(frame: Frame, start: float) -> str:
    """One line for a frame: when (from the first), which document, what it holds."""
    events = [
        f"{e.event_type} {e.status} ({', '.join(e.resources)})"
        + (f" NotBefore {e.not_before:%H:%M:%S}" if e.not_before is not None else "")
        for e in frame.document.events
    ]
    version = f" [{frame.api_version}]" if frame.api_version else ""
    what = "; ".join(events) or "no events"
    return f"+{frame.t - start:.1f}s incarnation {frame.incarnation}{version}: {what}"


async def run_replay(
    endpoint: ReplayEndpoint,
    sockets: list[socket.socket],
    *,
    tell: Callable[[Frame], None],
    linger: float | None = None,
) -> None:
    """Serve ``endpoint`` until SIGINT/SIGTERM, telling each frame when its time comes;
    with ``linger``, stop that many real seconds after the last frame. The replay starts
    now, unless the endpoint waits for its first request."""
    server = await serve_endpoint(endpoint, sockets)
    if not endpoint.waits_for_first_request:
        endpoint.start()
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, done.set)

    async def timeline() -> None:
        await endpoint.started.wait()
        for frame in endpoint.frames:
            await asyncio.sleep(endpoint.clock.real_seconds_until(frame.t))
            tell(frame)
        if linger is not None:
            await asyncio.sleep(linger)
            done.set()

    teller = asyncio.create_task(timeline())
    try:
        await done.wait()
    finally:
        teller.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await teller
        await server.close()
