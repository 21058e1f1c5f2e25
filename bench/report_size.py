"""The rehearsal report at fleet scale: size and render time at 1,000 and 10,000 VMs.

    python bench/report_size.py [--vms 1000 10000] [--browser]

Facts as a rolling reboot of every availability set leaves them (200-VM sets, 5 update
domains, an event per host and update domain of 2 VMs; every VM polls, every other one
approves, 1 in 20 never polls) plus one 48-VM scope hit with no notice, graded and
rendered as ``GET /api/v1/report`` does. Prints, per size: grading time, HTML render
time, the page's bytes, the JSON verdict's bytes, and with ``--browser`` (Debian's
chromium via Playwright) the time until the page is laid out and its height.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import msgspec

from forewarn.rehearsal import EventFacts, ReactionData, VmPolls, VmReaction, grade
from forewarn.rehearsal.facts import OperationFacts
from forewarn.rehearsal.report import render_report

T0 = 1_700_000_000.0
CHROMIUM = "/usr/bin/chromium"


def facts(vms: int) -> tuple[ReactionData, dict[str, str]]:
    """A rehearsal of ``vms`` VMs (see the module)."""
    data = ReactionData()
    scope_of: dict[str, str] = {}
    sets = max(1, round((vms - 48) / 200))
    for s in range(sets):
        scope = f"set{s}"
        names = [f"{scope}-{i}" for i in range(200)]
        scope_of.update(dict.fromkeys(names, scope))
        rollout = f"rollout-{s}"
        for ud in range(5):
            at = T0 + ud * 1200.0
            batch = names[ud::5]
            op = OperationFacts(
                id=f"op-{s}-{ud}", kind="platform-reboot", target=scope, rollout_id=rollout,
                rollout_scope=scope, batch=ud, batches=5, vms=tuple(batch), unnotified=(),
                created_at=at, not_before=at + 900, started_at=at + 600, ended_at=at + 1200,
            )  # fmt: skip
            ids = []
            for pair in range(0, len(batch), 2):
                listed = tuple(batch[pair : pair + 2])
                event_id = f"{s:04d}{ud}{pair:04d}-0000-0000-0000-000000000000"
                ids.append(event_id)
                data.events.append(
                    EventFacts(
                        id=event_id, operation_id=op.id, kind="platform-reboot",
                        scope_id=scope, event_type="Reboot", source="Platform",
                        resources=listed, created_at=at, not_before=at + 900,
                        approved_by=listed[0], approved_at=at + 30, started_at=at + 600,
                        start_reason="approved", ended_at=at + 1200, ended="completed",
                    )
                )  # fmt: skip
                for n, vm in enumerate(listed):
                    if hash(vm) % 20 == 0:
                        continue  # never polls
                    data.vms.append(
                        VmReaction(
                            event_id=event_id, vm=vm, first_seen=at + 1 + n,
                            approved_at=at + 30 if n == 0 else None,
                            last_poll_before_start=at + 590,
                        )
                    )  # fmt: skip
            data.operations.append(msgspec.structs.replace(op, event_ids=tuple(ids)))
    cache = [f"cache-{i}" for i in range(48)]
    scope_of.update(dict.fromkeys(cache, "cache"))
    data.operations.append(
        OperationFacts(id="op-cache", kind="platform-reboot", target="cache", vms=tuple(cache),
                       unnotified=tuple(cache), created_at=T0, started_at=T0, ended_at=T0 + 600)
    )  # fmt: skip
    polled = {r.vm for r in data.vms}
    data.polls = [VmPolls(vm=vm, first_poll=T0, last_poll=T0 + 7000, api_version="2020-07-01")
                  for vm in sorted(polled)]  # fmt: skip
    return data, scope_of


def measure(vms: int, browser: bool) -> None:
    data, scope_of = facts(vms)
    began = time.perf_counter()
    report = grade(data, now=T0 + 7000, scope_of=scope_of)
    graded = time.perf_counter() - began
    began = time.perf_counter()
    page = render_report(report)
    rendered = time.perf_counter() - began
    verdict = msgspec.json.encode(report)
    line = (
        f"{len(scope_of):>6} VMs, {len(report.events):>5} events, {len(report.operations):>3}"
        f" operations: grade {graded * 1000:.0f} ms, render {rendered * 1000:.0f} ms,"
        f" HTML {len(page.encode()) / 1e6:.2f} MB, JSON {len(verdict) / 1e6:.2f} MB"
    )
    if browser:
        line += _browser(page)
    print(line, flush=True)


def _browser(page: str) -> str:
    from playwright.sync_api import sync_playwright

    path = Path(f"/tmp/forewarn-report-bench-{time.time_ns()}.html")
    path.write_text(page, "utf-8")
    try:
        with sync_playwright() as p:
            chromium = p.chromium.launch(executable_path=CHROMIUM)
            tab = chromium.new_page(viewport={"width": 1280, "height": 800})
            began = time.perf_counter()
            tab.goto(path.as_uri(), wait_until="load")
            height = tab.evaluate("document.documentElement.scrollHeight")
            loaded = time.perf_counter() - began
            chromium.close()
    finally:
        path.unlink()
    return f", Chromium load+layout {loaded * 1000:.0f} ms, {height} px tall"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--vms", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--browser", action="store_true", help="also load it in Chromium")
    args = parser.parse_args()
    for vms in args.vms:
        measure(vms, args.browser)


if __name__ == "__main__":
    main()
