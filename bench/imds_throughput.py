"""Throughput of the metadata endpoint against a bare asyncio server, in one run.

Both servers run as child processes on loopback, each loaded by ``wrk`` with the same
connections and duration (server pinned to CPU 0, wrk to CPU 1 when taskset exists); the
result is printed as a ratio (goal: endpoint >= 40 % of
the bare server). The bare server answers every request with canned bytes; the endpoint
serves a real fleet's cached document with every request rule applied.

    python bench/imds_throughput.py [--seconds 5] [--connections 64] [--vms 10000]

Needs ``wrk`` (Debian: apt-get install wrk). The per-VM rate limit is off here: wrk
speaks from one address, i.e. as one VM.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

BARE_SERVER = textwrap.dedent(
    """
    import asyncio, sys, uvloop
    BODY = b'{"DocumentIncarnation":1,"Events":[]}'
    RESPONSE = (b"HTTP/1.1 200 OK\\r\\ncontent-type: application/json; charset=utf-8\\r\\n"
                b"content-length: %d\\r\\n\\r\\n" % len(BODY)) + BODY

    class Canned(asyncio.Protocol):
        def connection_made(self, transport):
            self.transport = transport
            self.buffer = b""
        def data_received(self, data):
            self.buffer += data
            while b"\\r\\n\\r\\n" in self.buffer:
                _, self.buffer = self.buffer.split(b"\\r\\n\\r\\n", 1)
                self.transport.write(RESPONSE)

    async def main(port):
        loop = asyncio.get_running_loop()
        server = await loop.create_server(Canned, "127.0.0.1", port, backlog=4096)
        print("ready", flush=True)
        await server.serve_forever()

    uvloop.run(main(int(sys.argv[1])))
    """
)

PATH = "/metadata/scheduledevents?api-version=2020-07-01"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


def pinned(cpu: int, command: list[str]) -> list[str]:
    """Run on one CPU when taskset exists: server and load generator never share a core."""
    return ["taskset", "-c", str(cpu), *command] if shutil.which("taskset") else command


def wrk(port: int, seconds: int, connections: int) -> float:
    out = subprocess.run(
        pinned(1, ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-H", "Metadata: true",
         f"http://127.0.0.1:{port}{PATH}"]),
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if match is None:
        raise RuntimeError(f"unexpected wrk output:\n{out}")
    if non2xx:
        raise RuntimeError(f"the endpoint answered errors during the run:\n{out}")
    return float(match.group(1))


def fleet_file(directory: Path, vms: int) -> Path:
    path = directory / "fleet.yaml"
    path.write_text(
        "scopes:\n"
        f"  - {{kind: scale_set, name: big, vms: {vms}, placement_groups: {max(1, vms // 100)}}}\n"
        "  - {kind: standalone, name: bench}\n"
        "default_vm: bench\n",
        encoding="utf-8",
    )
    return path


@contextlib.contextmanager
def running(command: list[str], port: int) -> Iterator[None]:
    """A server on CPU 0, listening on ``port``, for the length of the block."""
    proc = subprocess.Popen(
        pinned(0, command), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for_port(port, timeout=120)
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def measure(command: list[str], port: int, seconds: int, connections: int) -> float:
    with running(command, port):
        wrk(port, 1, connections)  # warm-up
        return wrk(port, seconds, connections)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--vms", type=int, default=10000)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("bench: wrk is not installed (apt-get install wrk)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        bare_port, imds_port, control_port = free_port(), free_port(), free_port()
        bare = measure([sys.executable, "-c", BARE_SERVER, str(bare_port)], bare_port,
                       args.seconds, args.connections)  # fmt: skip
        serve = [
            sys.executable, "-m", "forewarn", "serve",
            "--fleet", str(fleet_file(directory, args.vms)), "--db", str(directory / "b.db"),
            "--imds-bind", f"127.0.0.1:{imds_port}", "--control-bind", f"127.0.0.1:{control_port}",
            "--rate-limit", "0",
        ]  # fmt: skip
        endpoint = measure(serve, imds_port, args.seconds, args.connections)
    ratio = endpoint / bare
    print(f"bare asyncio server : {bare:10.0f} req/s")
    print(f"forewarn endpoint   : {endpoint:10.0f} req/s  ({args.vms} VMs in the fleet)")
    print(
        f"ratio               : {ratio:10.2f}  (goal >= 0.40) {'OK' if ratio >= 0.4 else 'BELOW'}"
    )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
