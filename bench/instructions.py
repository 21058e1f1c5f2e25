"""Instructions per request of the endpoint's protocol, counted by callgrind (issue 17).

    .venv/bin/python bench/instructions.py [--requests 20000] [--forewarn-src DIR]

Wall-clock figures on a shared machine move with the neighbours; instruction counts do
not. This drives the endpoint's HTTP protocol in-process (``Connection`` over a stand-in
transport, the real ``Endpoint`` of a 1,000-VM fleet with reaction tracking and metrics as
``forewarn serve`` wires them, rate limit off as in ``imds_throughput``), and the canned
server's protocol the same way, each under ``valgrind --tool=callgrind`` twice (0 and N
requests): the difference divided by N is the cost of one request, the kernel's and the
event loop's share excluded (the same for both servers). Modes: ``keepalive`` (the same
poll again and again on one connection, as a VM polls) and ``close`` (a new connection
per request: accept-side objects, parse, answer, close), and ``fleet`` (issue 39 point 4:
``fleet_tail``'s shape, ``--vms`` VMs of its fleet file, each on a kept-alive connection
from its own address, every one polled in turn under ``forewarn serve``'s default rate
limit; both runs first poll every VM three times, so only the polls after that are counted: the
unchanged document of a poll sent again, and each VM's last poll noted for its report).
Under callgrind a round of the fleet takes seconds, so each VM's poll comes in another
second than its last, as at 1 Hz: the Date line is new at every poll.

Needs valgrind (Debian: apt-get install valgrind). ``--forewarn-src`` measures another
tree (e.g. ``git archive main src | tar -x -C /tmp/before``) with the same driver.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

REQUEST = (
    b"GET /metadata/scheduledevents?api-version=2020-07-01 HTTP/1.1\r\n"
    b"Host: 169.254.169.254\r\nMetadata: true\r\nUser-Agent: bench\r\n\r\n"
)
CLOSE_REQUEST = REQUEST[:-2] + b"Connection: close\r\n\r\n"
VM_ADDRESS = "127.1.0.1"
EXTRA_INFO: dict[str, Any] = {"peername": (VM_ADDRESS, 40000), "sockname": ("127.0.0.1", 8169)}


class Transport:
    """What the protocols use of an asyncio transport; writes are only counted."""

    def __init__(self) -> None:
        self.written = 0
        self.closed = False
        # A C call, as uvloop's (a Python method here would be counted against forewarn).
        self.get_extra_info = EXTRA_INFO.get

    def write(self, data: bytes) -> None:
        self.written += 1

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None: ...

    def abort(self) -> None:
        self.closed = True


class Canned(asyncio.Protocol):
    """bench/imds_throughput.py's canned server, as it is there."""

    BODY = b'{"DocumentIncarnation":1,"Events":[]}'
    RESPONSE = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json; charset=utf-8\r\n"
        b"content-length: %d\r\n\r\n" % len(BODY)
    ) + BODY

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while b"\r\n\r\n" in self.buffer:
            _, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
            self.transport.write(self.RESPONSE)


async def _forewarn_factory() -> Any:
    """A factory of the endpoint's connections, wired as ``forewarn serve`` wires them."""
    from prometheus_client import CollectorRegistry

    from forewarn.fabric import Clock, Fabric, FabricConfig
    from forewarn.fleet import build_topology, fleet_from_builtins
    from forewarn.imds import Endpoint, ImdsSettings, serve_endpoint
    from forewarn.imds.metrics import EndpointMetrics
    from forewarn.rehearsal import track_reactions
    from forewarn.store import SQLiteStore

    spec = fleet_from_builtins({"scopes": [{"kind": "scale_set", "name": "big", "vms": 1000,
                                            "placement_groups": 10}]})  # fmt: skip
    store = SQLiteStore(":memory:")
    fabric = Fabric(build_topology(spec), store, Clock.real(), FabricConfig(enablement="always"))
    reactions = track_reactions(fabric, store)
    metrics = EndpointMetrics(CollectorRegistry())
    endpoint = Endpoint(fabric, ImdsSettings(rate_limit=None), on_response=metrics.observe,
                        reactions=reactions)  # fmt: skip
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    server = await serve_endpoint(endpoint, [listener])
    from forewarn.imds.connection import Connection

    shared = server._shared  # the connections' shared state, as the listener makes them
    return partial(Connection, shared, 8169)


async def _fleet_factory(vms: int) -> tuple[Any, list[str]]:
    """``fleet_tail``'s fleet as ``forewarn serve`` wires it (rate limit on, time scale 60,
    enablement on first request): the factory of its connections, and its VMs' addresses."""
    from fleet_tail import fleet_yaml
    from prometheus_client import CollectorRegistry

    from forewarn.fabric import Clock, Fabric, FabricConfig
    from forewarn.fleet import build_topology, load_fleet_file
    from forewarn.imds import Endpoint, ImdsSettings, serve_endpoint
    from forewarn.imds.connection import Connection
    from forewarn.imds.metrics import EndpointMetrics
    from forewarn.rehearsal import track_reactions
    from forewarn.store import SQLiteStore

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fleet.yaml"
        path.write_text(fleet_yaml(vms, min(200, vms)), encoding="utf-8")
        spec = load_fleet_file(path)
    topology = build_topology(spec)
    store = SQLiteStore(":memory:")
    config = FabricConfig(time_scale=60.0, enablement="on-first-request")
    fabric = Fabric(topology, store, Clock.real(), config)
    reactions = track_reactions(fabric, store)
    metrics = EndpointMetrics(CollectorRegistry())
    endpoint = Endpoint(fabric, ImdsSettings(), on_response=metrics.observe, reactions=reactions)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    server = await serve_endpoint(endpoint, [listener])
    addresses = [vm.address for vm in topology.vms.values()]
    return partial(Connection, server._shared, 8169), addresses


async def drive_fleet(server: str, vms: int, requests: int) -> int:
    """Every VM polls three times (not counted: both runs do it; the third is its first
    answered unparsed), then ``requests`` more polls, VM after VM; returns how many of
    those were answered."""
    if server == "canned":
        factory: Any = Canned
        addresses = [f"127.1.{i // 250}.{i % 250 + 1}" for i in range(vms)]
    else:
        factory, addresses = await _fleet_factory(vms)
    fleet = []
    for address in addresses:
        transport = Transport()
        transport.get_extra_info = {"peername": (address, 40000),
                                    "sockname": ("127.0.0.1", 8169)}.get  # fmt: skip
        protocol = factory()
        protocol.connection_made(transport)
        fleet.append((protocol, transport))
    for _ in range(3):
        for protocol, _ in fleet:
            protocol.data_received(REQUEST)
        await asyncio.sleep(0.1)  # what the loop does between rounds (writes reported)
    before = sum(transport.written for _, transport in fleet)
    for n in range(requests):
        fleet[n % len(fleet)][0].data_received(REQUEST)
    return sum(transport.written for _, transport in fleet) - before


async def drive(server: str, mode: str, requests: int, vms: int = 0) -> int:
    """Answer ``requests`` requests; returns how many replies were written."""
    if mode == "fleet":
        return await drive_fleet(server, vms, requests)
    factory = Canned if server == "canned" else await _forewarn_factory()
    written = 0
    if mode == "keepalive":
        transport = Transport()
        protocol = factory()
        protocol.connection_made(transport)
        for _ in range(requests):
            protocol.data_received(REQUEST)
        written = transport.written
    else:
        for _ in range(requests):
            transport = Transport()
            protocol = factory()
            protocol.connection_made(transport)
            protocol.data_received(CLOSE_REQUEST)
            if server == "canned":
                transport.close()
            protocol.connection_lost(None)
            written += transport.written
    return written


def child(args: argparse.Namespace) -> int:
    written = asyncio.run(drive(args.server, args.mode, args.requests, args.vms))
    if written != args.requests:
        print(f"bench: {written} replies for {args.requests} requests", file=sys.stderr)
        return 1
    return 0


def instructions(server: str, mode: str, requests: int, source: Path | None, vms: int) -> int:
    """Instructions callgrind counts for the whole child process."""
    env = {**os.environ}
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                   sys.executable, __file__, "--child", "--server", server, "--mode", mode,
                   "--requests", str(requests), "--vms", str(vms)]  # fmt: skip
        subprocess.run(command, env=env, check=True, capture_output=True)
        match = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
        if match is None:
            raise RuntimeError("no totals in callgrind's output")
        return int(match.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--modes", default="keepalive,close", help="and fleet")
    parser.add_argument("--vms", type=int, default=10000, help="the fleet mode's VMs")
    parser.add_argument("--servers", default="canned,forewarn")
    parser.add_argument("--forewarn-src", type=Path)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--server", help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    if shutil.which("valgrind") is None:
        print("bench: valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    where = args.forewarn_src or "the installed tree"
    print(f"instructions per request (callgrind, {args.requests} requests; forewarn: {where})")
    for mode in args.modes.split(","):
        for server in args.servers.split(","):
            base = instructions(server, mode, 0, args.forewarn_src, args.vms)
            full = instructions(server, mode, args.requests, args.forewarn_src, args.vms)
            print(f"  {mode:9s} {server:8s} {(full - base) / args.requests:10,.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
