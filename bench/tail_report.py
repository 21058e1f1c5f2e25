"""The fleet_tail report: one measured window (``Run``), the targets of issue 5 with
PASS/MISS, and the printed tables. Kept apart from the runner so both stay readable."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AVSET", "HOLD", "NOTICE", "Run", "print_report", "targets"]

AVSET = "avset"
NOTICE, HOLD = 900.0, 600.0  # a platform reboot: 15 min notice, Started for 10 min
MIB = 1024 * 1024


@dataclass
class Run:
    """One measured window against one server."""

    server: str
    index: int
    report: dict[str, Any]
    cpu_percent: float
    rss_bytes: int
    server_wait: float  # % of the window the server's event loop waited for its core
    generator_cpu: float
    generator_wait: float  # summed over the generator's threads (they share one core)
    problems: list[str] = field(default_factory=list)
    rollout: dict[str, Any] = field(default_factory=dict)
    gc: dict[str, Any] = field(default_factory=dict)
    #: ``--streams``/``--report-every``: the streams held open and every report fetch.
    dashboard: dict[str, Any] = field(default_factory=dict)
    #: ``--workers N``: each worker's pid, CPU, RSS and loop wait (the sums are above).
    workers: list[dict[str, Any]] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def errors(self) -> int:
        """Failed polls, non-200 answers and failed approvals."""
        report = self.report
        non200 = sum(int(n) for s, n in report["statuses"].items() if s != "200")
        approvals = report["approvals"]
        bad_approvals = int(approvals["errors"]) + sum(
            int(n) for s, n in approvals["statuses"].items() if s != "200"
        )
        return int(report["error_total"]) + non200 + bad_approvals

    def latency(self, key: str) -> float:
        return float(self.report["latency"][key])

    @property
    def front_end_cpu(self) -> float:
        """The busiest front-end's CPU (% of one core): the goal holds per front-end."""
        return max((float(w["cpu_percent"]) for w in self.workers), default=self.cpu_percent)

    @property
    def front_end_rss(self) -> int:
        return max((int(w["rss_bytes"]) for w in self.workers), default=self.rss_bytes)


def _span(values: list[float], fmt: str = "{:.1f}") -> str:
    if not values:
        return "n/a"
    low, high = fmt.format(min(values)), fmt.format(max(values))
    return low if low == high else f"{low}-{high}"


def targets(runs: list[Run]) -> list[tuple[str, str, str]]:
    """(target, measured, PASS/MISS/n/a) for every target of the issue, from valid runs."""
    ours = [r for r in runs if r.server == "forewarn" and r.valid]
    canned = {r.index: r for r in runs if r.server == "canned" and r.valid}
    pairs = [(r, canned[r.index]) for r in ours if r.index in canned]
    p99 = [r.latency("p99_ms") / max(c.latency("p99_ms"), 1e-3) for r, c in pairs]
    p999 = [r.latency("p99_9_ms") / max(c.latency("p99_9_ms"), 1e-3) for r, c in pairs]
    rows: list[tuple[str, list[float], float, str]] = [
        ("errors = 0", [float(r.errors) for r in ours], 0.0, "{:.0f}"),
        ("p99 <= 2 x canned (same run)", p99, 2.0, "{:.2f}"),
        ("p99.9 <= 3 x canned (same run)", p999, 3.0, "{:.2f}"),
        ("max <= 50 ms", [r.latency("max_ms") for r in ours], 50.0, "{:.1f} ms"),
        ("CPU <= 50 % of one core", [r.front_end_cpu for r in ours], 50.0, "{:.0f} %"),
        ("RSS <= 200 MB", [r.front_end_rss / 1e6 for r in ours], 200.0, "{:.0f} MB"),
    ]
    out = []
    for name, values, limit, fmt in rows:
        verdict = "n/a" if not values else ("PASS" if max(values) <= limit else "MISS")
        out.append((name, _span(values, fmt), verdict))
    return out


def print_report(runs: list[Run], args: argparse.Namespace, load: tuple[str, str]) -> None:
    print(
        f"\n{args.vms} VMs at 1 Hz, {args.seconds:g} s windows, rollout of {args.avset}-VM "
        f"{AVSET} at +{args.rollout_at:g} s, time scale {args.time_scale:g}, "
        f"enablement {args.enablement}, priority {args.priority} "
        f"(generator {args.generator_priority}); "
        f"load average before {load[0]}, after {load[1]}"
    )
    store = "SQLite" if args.store is None else f"PostgreSQL, {args.workers} front-end(s)"
    report = f"every {args.report_every:g} s" if args.report_every else "none"
    print(
        f"forewarn on {store}; during each forewarn window {args.streams} dashboard "
        f"streams open, the HTML report fetched {report} (the canned server has neither)"
    )
    starts = args.rollout_at + NOTICE / args.time_scale
    ends = starts + HOLD / args.time_scale
    print(
        f"in each forewarn window: rollout created at +{args.rollout_at:g} s, its first batch "
        f"starts at +{starts:g} s (unless all approve), ends and the second batch is created "
        f"at +{ends:g} s; then the VMs of the second batch approve"
    )
    head = (
        f"{'run':>3} {'server':9} {'errors':>6} {'p50':>7} {'p99':>7} {'p99.9':>7} "
        f"{'max':>7} {'CPU':>5} {'RSS':>8} {'rate':>7} {'lag p99':>8} {'lag max':>8} "
        f"{'wait':>5}  note"
    )
    print(head)
    for r in runs:
        lat, lag = r.report["latency"], r.report["send_lag"]
        note = "; ".join(r.problems) if r.problems else "ok"
        if r.rollout:
            note += (
                f"; rollout {r.rollout['create_ms']:.0f} ms to create, "
                f"{r.rollout['batches_started']}/{r.rollout['batches_created']} batches "
                f"started, {r.report['approvals']['sent']} approvals"
            )
        print(
            f"{r.index:>3} {r.server:9} {r.errors:>6} {lat['p50_ms']:>5.1f}ms "
            f"{lat['p99_ms']:>5.1f}ms {lat['p99_9_ms']:>5.1f}ms {lat['max_ms']:>5.1f}ms "
            f"{r.cpu_percent:>4.0f}% {r.rss_bytes / MIB:>5.0f}MiB "
            f"{r.report['achieved_rate']:>7.0f} {lag['p99_ms']:>6.2f}ms {lag['max_ms']:>6.1f}ms"
            f" {r.server_wait:>4.1f}%  {note}"
        )
    print("\nstalls of each run (polls that finished late together; start in the window: "
          "longest ms / polls (the generator's own longest lateness in sending one + the "
          "longest from a send to its answer; w: the longest a server loop waited for its "
          "core meanwhile, what ran there instead took that: a neighbour, or with workers also a "
          "sibling; s: the server CPU's time the host took meanwhile, when any)):")  # fmt: skip
    for r in runs:
        stalls = ", ".join(f"{st['at_ms'] / 1000:.1f}s: {st['ms']:.0f}/{st['requests']} "
                           f"({st.get('lag_ms', 0):.0f}+{st.get('answer_ms', 0):.0f}"
                           + (f" w{st['loop_wait_ms']:.0f}" if "loop_wait_ms" in st else "")
                           + (f" s{st['steal_ms']:.0f}" if st.get("steal_ms") else "") + ")"
                           for st in (r.report.get("stalls") or [])[:6])  # fmt: skip
        print(f"  run {r.index} {r.server}: {stalls or 'none over 10 ms'}")
    print("\ncollector pauses >= 1 ms in each forewarn window (second: generation/ms):")
    for r in runs:
        if r.server == "forewarn" and r.gc:
            pauses = sorted(r.gc["pauses"], key=lambda p: -p["ms"])
            longest = ", ".join(f"{p['at']:.1f}s: gen{p['generation']}/{p['ms']:.0f}"
                                + (f" (pid {p['pid']})" if "pid" in p else "")
                                for p in pauses[:5])  # fmt: skip
            print(f"  run {r.index}: {len(pauses)} pauses, {sum(p['ms'] for p in pauses):.0f} ms "
                  f"in all; longest {longest or '-'}")  # fmt: skip
    _print_extras(runs)
    canned = {r.index: r for r in runs if r.server == "canned"}
    pairs = [(r, canned[r.index]) for r in runs if r.server == "forewarn" and r.index in canned]
    if pairs:
        print("\nforewarn / canned, same run:")
    for ours, base in pairs:
        p99 = ours.latency("p99_ms") / max(base.latency("p99_ms"), 1e-3)
        p999 = ours.latency("p99_9_ms") / max(base.latency("p99_9_ms"), 1e-3)
        valid = "" if ours.valid and base.valid else "  (invalid pair)"
        print(f"  run {ours.index}: p99 x{p99:.1f}, p99.9 x{p999:.1f}{valid}")
    print("\ntarget (issue 5)                        measured        verdict")
    if any(r.workers for r in runs):
        print("  (CPU and RSS: the busiest front-end's)")
    for name, measured, verdict in targets(runs):
        print(f"  {name:36s}  {measured:14s}  {verdict}")


def _print_extras(runs: list[Run]) -> None:
    """Each forewarn window's front-ends, dashboard streams and report fetches, if any."""
    if any(r.workers or r.dashboard for r in runs):
        print("\nfront-ends, dashboard streams and report fetches of each forewarn window:")
    for r in runs:
        if r.server != "forewarn":
            continue
        for w in r.workers:
            print(f"  run {r.index} front-end pid {w['pid']}: CPU {w['cpu_percent']:.0f} %, "
                  f"RSS {w['rss_bytes'] / MIB:.0f} MiB, loop waited {w['loop_wait']:.1f} % "
                  "(also for the other front-ends on its core)")  # fmt: skip
        board = r.dashboard
        if not board:
            continue
        fetches = board["reports"]
        took = ", ".join(f"{f['at']:.0f}s: {f['ms']:.0f} ms/{f['status']}" for f in fetches)
        print(f"  run {r.index}: {board['streams']} streams opened, "
              f"{board['still_open']} still open at the end; "
              f"{len(fetches)} report fetches (second: ms/status) {took or '-'}")  # fmt: skip
