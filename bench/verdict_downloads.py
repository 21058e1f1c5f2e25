"""What one dashboard tab costs to keep its verdict fresh, at 10,000 VMs: bytes sent and
server CPU per refresh of ``GET /api/v1/reactions``, as the page asked before (no
validator, no compression) and as it asks now (its ETag in ``If-None-Match``, gzip).

    python bench/verdict_downloads.py [--vms 10000] [--refreshes 6]

A real ``forewarn serve`` (virtual clock) of a fleet shaped as in ``bench/dashboard.py``;
a user reboot of every VM (one operation per scope: events listing every VM, none of
which polls), then ``--refreshes`` refreshes (the page's one every 10 s: a minute of a
tab by default) with nothing changed, then one after a change (one more event). Server
CPU is the process's user+system time across each request (/proc), so it includes the
grading on the tracker's thread and the compression.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dashboard import fleet_yaml
from loadgen import forewarn_env, free_port, quiet_serve_command, start_server


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0  # utime + stime, clock ticks


def _refresh(client: httpx.Client, pid: int, headers: dict[str, str]) -> tuple[int, int, float]:
    """One refresh: (status, bytes on the wire, server CPU seconds)."""
    before = _cpu(pid)
    with client.stream("GET", "/api/v1/reactions", headers=headers) as response:
        wire = sum(len(part) for part in response.iter_raw())
        tag = response.headers.get("etag")
    if tag is not None:
        headers["If-None-Match"] = tag
    return response.status_code, wire, _cpu(pid) - before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vms", type=int, default=10_000)
    parser.add_argument("--refreshes", type=int, default=6)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="forewarn-verdict-") as folder:
        work = Path(folder)
        fleet = work / "fleet.yaml"
        fleet.write_text(fleet_yaml(args.vms), encoding="utf-8")
        imds, control_port = free_port(), free_port()
        command = quiet_serve_command(
            fleet, work / "bench.db", imds, control_port, "--clock", "virtual"
        )
        url = f"http://127.0.0.1:{control_port}"
        with (
            start_server(command, [imds, control_port], work / "serve.log",
                         env=forewarn_env(None)) as server,
            httpx.Client(base_url=url, timeout=120, trust_env=False) as client,
        ):  # fmt: skip
            pid = server.proc.pid
            topology = client.get("/api/v1/topology").json()
            for scope in topology["scopes"]:
                names = [vm["name"] for vm in scope["vms"]]
                made = client.post(
                    "/api/v1/operations", json={"kind": "platform-reboot", "vms": names}
                )
                assert made.status_code == 201, made.text
            rows = []
            for now in (False, True):
                headers = {"Accept-Encoding": "gzip" if now else "identity"}
                _refresh(client, pid, headers)  # the tab's first verdict (and its tag)
                if not now:
                    headers.pop("If-None-Match", None)  # the page sent none
                series = []
                for _ in range(args.refreshes):
                    series.append(_refresh(client, pid, headers))
                    if not now:
                        headers.pop("If-None-Match", None)  # the page sent none
                change = {"kind": "user-reboot", "target": "build-agent" if now else "monitor"}
                client.post("/api/v1/operations", json=change).raise_for_status()
                changed = _refresh(client, pid, headers)
                rows.append((now, series, changed))
    print(f"verdict downloads: {args.vms} VMs, {args.refreshes} refreshes with nothing changed, "
          "then one after a change")  # fmt: skip
    print("| page asks | unchanged: status, bytes each | server CPU each (median) "
          "| bytes per 10 s per tab | after a change: status, bytes, CPU |")  # fmt: skip
    print("|---|---|---|---|---|")
    for now, series, changed in rows:
        statuses = sorted({s for s, _, _ in series})
        wire = statistics.median(b for _, b, _ in series)
        cpu = statistics.median(c for _, _, c in series)
        label = "now (If-None-Match, gzip)" if now else "before (no validator, identity)"
        print(f"| {label} | {statuses}, {wire / 1e3:,.1f} KB | {cpu * 1000:.0f} ms "
              f"| {wire / 1e3:,.1f} KB | {changed[0]}, {changed[1] / 1e3:,.1f} KB, "
              f"{changed[2] * 1000:.0f} ms |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
