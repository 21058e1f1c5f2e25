"""A fleet polling once per second: every VM its own connection and source address.

Starts ``forewarn serve`` with a fleet of N VMs (default 10,000) and a load generator
in another process that opens one keep-alive connection per VM from the VM's own
loopback address and asks for the document once per second, as Microsoft recommends.
The same load runs against a bare asyncio server answering canned bytes, in the same run.
It prints requests per second achieved against the offered rate, latency percentiles,
errors, and the ratio of each to the baseline (goal: the full rate, no errors, with the
per-VM rate limit on).

    python bench/fleet_polling.py [--vms 10000] [--seconds 10]

The generator is Python: it reports how late each poll left against its schedule, and
the run says when it fell behind (achieved rate below the offered one, or send lag p99
above 50 ms) — then the figures measure the generator, not the server. For tail
latency use ``bench/fleet_tail.py`` (a Go generator, latency from the scheduled time).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from imds_throughput import BARE_SERVER, running
from loadgen import free_port, pinned

PATH = "/metadata/scheduledevents?api-version=2020-07-01"
MAX_LAG_MS = 50.0
MIN_SHARE = 0.98

LOAD = textwrap.dedent(
    """
    import asyncio, json, random, socket, sys, time, uvloop
    port, vms, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    REQUEST = (b"GET %s HTTP/1.1\\r\\nHost: 169.254.169.254\\r\\nMetadata: true\\r\\n\\r\\n"
               % sys.argv[4].encode())
    latencies, lags, errors, statuses = [], [], 0, {}

    def address(i):
        return f"127.1.{i // 250}.{i % 250 + 1}"

    async def vm(i, start, stop):
        global errors
        sock = socket.socket()
        sock.bind((address(i), 0))
        sock.setblocking(False)
        loop = asyncio.get_running_loop()
        await asyncio.sleep(random.random())  # spread the polls over the second
        try:
            await loop.sock_connect(sock, ("127.0.0.1", port))
            reader, writer = await asyncio.open_connection(sock=sock)
        except OSError:
            errors += 1
            return
        tick = loop.time()
        while loop.time() < stop:
            sent = loop.time()
            clock = time.perf_counter()  # uvloop's loop.time() ticks in milliseconds
            writer.write(REQUEST)
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\\r\\n\\r\\n"), 5)
                length = int(head.lower().split(b"content-length: ")[1].split(b"\\r\\n")[0])
                await reader.readexactly(length)
            except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, IndexError):
                errors += 1
                return
            status = int(head[9:12])
            statuses[status] = statuses.get(status, 0) + 1
            if sent >= start:
                latencies.append(time.perf_counter() - clock)
                lags.append(max(0.0, sent - tick))
            tick += 1.0
            await asyncio.sleep(max(0.0, tick - loop.time()))
        writer.close()

    async def main():
        loop = asyncio.get_running_loop()
        start = loop.time() + 2.0  # connect and settle first
        stop = start + seconds
        await asyncio.gather(*(vm(i, start, stop) for i in range(vms)))
        latencies.sort()
        lags.sort()
        pick = lambda xs, q: xs[min(len(xs) - 1, int(q * len(xs)))] * 1000 if xs else 0.0
        print(json.dumps({"requests": len(latencies), "rate": len(latencies) / seconds,
                          "p50_ms": pick(latencies, 0.5), "p99_ms": pick(latencies, 0.99),
                          "max_ms": pick(latencies, 1.0), "lag_p99_ms": pick(lags, 0.99),
                          "lag_max_ms": pick(lags, 1.0), "errors": errors,
                          "statuses": statuses}))

    uvloop.run(main())
    """
)


def fleet_file(directory: Path, vms: int) -> Path:
    path = directory / "fleet.yaml"
    groups = max(1, vms // 100)
    path.write_text(
        f"scopes:\n  - {{kind: scale_set, name: big, vms: {vms}, placement_groups: {groups}}}\n",
        encoding="utf-8",
    )
    return path


def run_load(port: int, vms: int, seconds: float) -> dict[str, float]:
    out = subprocess.run(
        pinned(1, [sys.executable, "-c", LOAD, str(port), str(vms), str(seconds), PATH]),
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def fell_behind(result: dict[str, float], offered: float) -> str | None:
    """Why the generator missed its own schedule, or None when it kept it."""
    reasons = []
    if result["rate"] < MIN_SHARE * offered:
        reasons.append(f"achieved {result['rate']:.0f} of {offered:.0f} offered req/s")
    if result["lag_p99_ms"] > MAX_LAG_MS:
        reasons.append(f"polls left {result['lag_p99_ms']:.0f} ms late at p99")
    return "; ".join(reasons) or None


def measure(command: list[str], port: int, vms: int, seconds: float) -> dict[str, float]:
    with running(command, port):
        return run_load(port, vms, seconds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vms", type=int, default=10000)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        bare_port, imds_port, control_port = free_port(), free_port(), free_port()
        bare = measure([sys.executable, "-c", BARE_SERVER, str(bare_port)], bare_port,
                       args.vms, args.seconds)  # fmt: skip
        serve = [
            sys.executable, "-m", "forewarn", "serve",
            "--fleet", str(fleet_file(directory, args.vms)), "--db", str(directory / "f.db"),
            "--imds-bind", f"127.0.0.1:{imds_port}",
            "--control-bind", f"127.0.0.1:{control_port}",
        ]  # fmt: skip
        endpoint = measure(serve, imds_port, args.vms, args.seconds)
    print(f"offered              : {args.vms:10d} req/s ({args.vms} VMs, 1 poll/s each)")
    for name, result in (("bare asyncio server", bare), ("forewarn endpoint", endpoint)):
        print(
            f"{name:21s}: {result['rate']:10.0f} req/s  p50 {result['p50_ms']:6.1f} ms  "
            f"p99 {result['p99_ms']:6.1f} ms  errors {result['errors']:.0f}  "
            f"statuses {result['statuses']}  send lag p99 {result['lag_p99_ms']:.1f} ms"
        )
        behind = fell_behind(result, args.vms)
        if behind:
            print(f"{'':21s}  GENERATOR FELL BEHIND: {behind}; these figures measure the "
                  "generator, not the server (see bench/fleet_tail.py)")  # fmt: skip
    ratio = endpoint["rate"] / bare["rate"]
    print(f"rate ratio           : {ratio:10.2f}  (goal >= 0.95, with no errors and no 429)")
    print(f"p50 latency ratio    : {endpoint['p50_ms'] / max(bare['p50_ms'], 0.001):10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
