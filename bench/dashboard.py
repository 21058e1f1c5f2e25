"""The dashboard with a 1,000- or 10,000-VM fleet, in headless Chromium: time to first
render and update latency, while every VM polls once a second.

One command (needs Debian's chromium and, for the polling load, Go to build fleetgen):

    python bench/dashboard.py [--vms 1000|10000 | --fleet FILE] [--renders 5]
                              [--trials 20] [--no-load]

A real ``forewarn serve`` of the shipped 1,000-VM fleet (``fleet init --example
thousand``) or, with ``--vms N`` other than 1000, a fleet of the same shape written for
the run (``fleet_yaml``: availability sets of 200, batch scale sets of 1,000 in placement
groups of 100, a Spot scale set, cache sets, two standalone VMs), every VM polling its
document once a second from its own address (``bench/fleetgen``, pinned to the other
core), and Chromium driven by Playwright:

- **first render**: a new tab opens ``/`` and draws the fleet rolled up (region, scope
  kind, scope; a fleet up to 300 VMs with every scope open and its VMs, grouped by update
  domain and host), the events, history and verdicts; measured in the page from
  navigation start until the first snapshot of the live stream is drawn;
- **update latency**: a user reboot is triggered through the control API and timed from
  just before the request until the page drew the new event; then the event is approved
  and timed until the page showed it Started (both: server commit, server-sent event,
  the page's redraw);
- **main thread**: long tasks (over 50 ms) of the page during 10 s of ticks (per scope:
  the counts that changed, the scopes where a VM moved; a big fleet's first scope opened,
  its VMs asked for again as they poll), and the size of a snapshot and of a tick.

Results go to ``bench/RESULTS.md`` by hand; ``--json FILE`` keeps every figure.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loadgen import (
    FleetgenRun,
    build_fleetgen,
    exit_on_sigterm,
    forewarn_env,
    free_port,
    go_missing_reason,
    load_average,
    quiet_serve_command,
    start_server,
    write_vms_file,
)

CHROMIUM = "/usr/bin/chromium"
#: Fleets up to this many VMs open every scope (the page's OPEN_UP_TO).
OPEN_UP_TO = 300
FLEET = Path(__file__).resolve().parents[1] / "src/forewarn/fleet/fleets/thousand.yaml"


def fleet_yaml(vms: int) -> str:
    """A fleet of ``vms`` VMs shaped like ``thousand``: 20 % API servers in availability
    sets of 200, 60 % batch workers in scale sets of up to 1,000 (placement groups of 100),
    15 % Spot, the rest cache sets of up to 200 and two standalone VMs; 10 VMs a host."""
    if vms < 100:
        raise ValueError(f"--vms must be at least 100, not {vms}")
    lines = [f"hosts: {vms // 10}", "default_vm: api0-0", "scopes:"]

    def split(name: str, total: int, size: int, line: str) -> None:
        for k, start in enumerate(range(0, total, size)):
            count = min(size, total - start)
            lines.append("  - {" + line.format(name=f"{name}{k}", vms=count,
                                               groups=max(1, count // 100)) + "}")  # fmt: skip

    api, batch, spot = vms // 5, vms * 3 // 5, vms * 3 // 20
    cache = vms - 2 - api - batch - spot
    split("api", api, 200, "kind: availability_set, name: {name}, vms: {vms}, "
          "update_domains: 5, fault_domains: 3")  # fmt: skip
    split("batch", batch, 1000, "kind: scale_set, name: {name}, vms: {vms}, "
          "placement_groups: {groups}, update_domains: 5, fault_domains: 5, "
          "terminate_notification: {{enabled: true, timeout_minutes: 15}}")  # fmt: skip
    split("spot", spot, 1000, "kind: scale_set, name: {name}, vms: {vms}, spot: true, "
          "placement_groups: {groups}, update_domains: 5, fault_domains: 2")  # fmt: skip
    split("cache", cache, 200, "kind: availability_set, name: {name}, vms: {vms}, "
          "update_domains: 4, fault_domains: 2")  # fmt: skip
    lines += ["  - {kind: standalone, name: build-agent}", "  - {kind: standalone, name: monitor}"]
    return "\n".join(lines) + "\n"


def _percentiles(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    p90 = ordered[max(0, round(0.9 * len(ordered)) - 1)]
    digits = 1 if ordered[-1] < 10 else 0
    return (
        f"median {statistics.median(ordered):.{digits}f} ms, p90 {p90:.{digits}f} ms, "
        f"max {ordered[-1]:.{digits}f} ms"
    )


def _wait(page: Any, expression: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = page.evaluate(expression)
        if value:
            return value
        time.sleep(0.005)
    raise RuntimeError(f"the page never showed {expression}")


def _tick_sizes(control: str, seconds: float) -> tuple[int, list[int]]:
    """Bytes of the stream's snapshot and of each tick over ``seconds``."""
    snapshot = 0
    ticks: list[int] = []
    deadline = time.monotonic() + seconds
    with (
        httpx.Client(timeout=30, trust_env=False) as client,
        client.stream("GET", control + "/api/v1/stream") as response,
    ):
        kind = ""
        for line in response.iter_lines():
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:"):
                if kind == "snapshot":
                    snapshot = len(line) - 5
                elif kind == "tick":
                    ticks.append(len(line) - 5)
            if time.monotonic() > deadline:
                break
    return snapshot, ticks


def measure(args: argparse.Namespace, control: str, results: dict[str, Any]) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launch_args = ["--no-sandbox"] if os.geteuid() == 0 else []
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=launch_args)
        renders, loaded, opened = [], [], []
        for _ in range(args.renders):
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(control + "/")
            page.wait_for_selector("body[data-ready]", timeout=60_000)
            renders.append(page.evaluate("window.forewarnRenderedAt"))
            loaded.append(
                page.evaluate(
                    "performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd"
                )
            )
            opened.append(page.evaluate("window.forewarnStreamAt"))
            if results["vms"] <= OPEN_UP_TO:  # every scope open, its VMs asked for
                page.wait_for_selector("body[data-fleet-ready]", timeout=60_000)
                assert page.locator("#fleet .vm").count() == results["vms"]
            else:  # rolled up: no VM drawn until a scope is opened
                assert page.locator("#fleet .vm").count() == 0
            page.close()
        results["first_render_ms"] = renders
        results["page_loaded_ms"] = loaded
        results["stream_open_ms"] = opened

        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(control + "/")
        page.wait_for_selector("body[data-ready]", timeout=60_000)
        appear, start = [], []
        with httpx.Client(base_url=control, timeout=30, trust_env=False) as api:
            for trial in range(args.trials):
                vm = results["names"][trial % len(results["names"])]  # one VM per trial
                sent = time.time()
                op = api.post("/api/v1/operations", json={"kind": "user-reboot", "target": vm})
                op.raise_for_status()
                (event_id,) = op.json()["event_ids"]
                seen = _wait(page, f"window.forewarnTimes['{event_id}:Scheduled']")
                appear.append(seen - sent * 1000)
                sent = time.time()
                api.post(f"/api/v1/events/{event_id}/approve", json={}).raise_for_status()
                seen = _wait(page, f"window.forewarnTimes['{event_id}:Started']")
                start.append(seen - sent * 1000)
                time.sleep(0.3)
        results["event_appears_ms"] = appear
        results["event_started_ms"] = start

        page.evaluate(
            """() => { window.longTasks = [];
            new PerformanceObserver((list) => { for (const e of list.getEntries())
              window.longTasks.push(e.duration); }).observe({type: "longtask"}); }"""
        )
        if results["vms"] > OPEN_UP_TO:  # a user opens a kind, then its first scope
            page.click("#fleet details.kind > summary")
            page.click("#fleet details.scope > summary")
            page.wait_for_selector("#fleet .vm", timeout=30_000)
        time.sleep(args.observe)
        results["long_tasks_ms"] = page.evaluate("window.longTasks")
        results["handling_ms"] = page.evaluate("window.forewarnSpentMs")
        results["vms_shown_fresh"] = page.locator("#fleet .vm .age.fresh").count()
        results["vms_drawn"] = page.locator("#fleet .vm").count()
        page.close()
        browser.close()
    snapshot, ticks = _tick_sizes(control, min(6.0, args.observe + 1))
    results["snapshot_bytes"] = snapshot
    results["tick_bytes"] = ticks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--fleet", type=Path, default=None, help="Default: the thousand fleet.")
    size.add_argument("--vms", type=int, default=None,
                      help="A fleet of this many VMs (1000: the thousand fleet).")  # fmt: skip
    parser.add_argument("--renders", type=int, default=5)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--no-load", action="store_true", help="VMs do not poll.")
    parser.add_argument("--observe", type=float, default=10.0, help="Seconds of ticks watched.")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    exit_on_sigterm()
    if not os.path.exists(CHROMIUM):
        print(f"dashboard: no Chromium at {CHROMIUM} (apt-get install chromium)")
        return 2
    load = not args.no_load
    if load and go_missing_reason() is not None:
        print(f"dashboard: no polling load: {go_missing_reason()}")
        load = False
    if args.vms is not None and args.vms < 100:
        print(f"dashboard: --vms must be at least 100, not {args.vms}")
        return 2
    results: dict[str, Any] = {"load_before": load_average()}
    with tempfile.TemporaryDirectory(prefix="forewarn-dashboard-") as folder:
        work = Path(folder)
        fleet = args.fleet or FLEET
        if args.vms is not None and args.vms != 1000:
            fleet = work / "fleet.yaml"
            fleet.write_text(fleet_yaml(args.vms), encoding="utf-8")
        imds, control_port = free_port(), free_port()
        command = quiet_serve_command(
            Path(fleet), work / "bench.db", imds, control_port, "--time-scale", "60"
        )
        control = f"http://127.0.0.1:{control_port}"
        with start_server(
            command, [imds, control_port], work / "serve.log", env=forewarn_env(None)
        ):
            vms = httpx.get(control + "/api/v1/vms", timeout=30).json()
            results["vms"] = len(vms)
            results["names"] = [v["name"] for v in vms]
            generator = None
            if load:
                binary = build_fleetgen(work)
                listed = write_vms_file(work / "vms.txt", [(v["address"], v["name"], False)
                                                           for v in vms])  # fmt: skip
                seconds = 60 + args.renders * 10 + args.trials * 3
                generator = FleetgenRun.launch(binary, imds, listed, seconds)
            try:
                measure(args, control, results)
            finally:
                if generator is not None:
                    generator.proc.terminate()
                    with contextlib.suppress(Exception):
                        generator.proc.wait(timeout=10)
    results["load_after"] = load_average()
    del results["names"]
    results["polling"] = load
    results["observed_s"] = args.observe
    _print(results)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


def _print(r: dict[str, Any]) -> None:
    ticks = r["tick_bytes"]
    long_tasks = r["long_tasks_ms"]
    print(f"dashboard: {r['vms']} VMs, every VM polling once a second: {r['polling']}; "
          f"load average {r['load_before']} -> {r['load_after']}")  # fmt: skip
    print("| measure | result |")
    print("|---|---|")
    print(f"| first render (navigation to the fleet drawn, rolled up), {len(r['first_render_ms'])} "
          f"tabs | {_percentiles(r['first_render_ms'])} |")  # fmt: skip
    print(f"| of which: page loaded (DOMContentLoaded) | {_percentiles(r['page_loaded_ms'])} |")
    print(f"| of which: live stream answered | {_percentiles(r['stream_open_ms'])} |")
    print(f"| trigger to the event drawn, {len(r['event_appears_ms'])} trials | "
          f"{_percentiles(r['event_appears_ms'])} |")  # fmt: skip
    print(f"| approve to Started drawn | {_percentiles(r['event_started_ms'])} |")
    print(f"| long tasks (> 50 ms) in {r['observed_s']:g} s of ticks | {len(long_tasks)}"
          + (f", longest {max(long_tasks):.0f} ms |" if long_tasks else " |"))  # fmt: skip
    print(f"| VMs shown as polled in the last 10 s | {r['vms_shown_fresh']} of the "
          f"{r['vms_drawn']} drawn ({r['vms']} in the fleet) |")  # fmt: skip
    for kind in ("snapshot", "change", "tick"):
        spent = r["handling_ms"].get(kind, [])
        if spent:
            print(f"| the page handling one {kind} (parse and redraw), {len(spent)} | "
                  f"{_percentiles(spent)} |")  # fmt: skip
    size = statistics.median(ticks) if ticks else 0
    print(f"| snapshot / tick size | {r['snapshot_bytes'] / 1000:.0f} KB / "
          f"{size / 1000:.1f} KB (median of {len(ticks)}) |")  # fmt: skip


if __name__ == "__main__":
    threading.current_thread().name = "dashboard-bench"
    sys.exit(main())
