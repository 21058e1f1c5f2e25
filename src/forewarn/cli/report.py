"""``forewarn report``: the verdict on how the fleet reacted, from a running server.

The server grades (``GET /api/v1/reactions``) and renders the HTML page
(``GET /api/v1/report``); this command asks for them and prints, saves or both.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from forewarn.cli.api import ControlApi
from forewarn.cli.errors import fail, finite
from forewarn.cli.output import Column, print_json, table, when
from forewarn.scenarios.durations import parse_duration

__all__ = ["parse_since", "report"]


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 10:
        return f"{value:.1f}s"
    if value < 120:
        return f"{value:.0f}s"
    if value < 7200:
        return f"{value / 60:.0f}m"
    return f"{value / 3600:.1f}h"


def parse_since(text: str, server_now: Any) -> float:
    """``--since``: a POSIX time, an ISO 8601 time (UTC unless it says), or a duration
    ago on the server's clock (``15m``: the server may run a virtual clock)."""
    value = text.strip()
    try:
        number = float(value)
    except ValueError:
        number = None
    if number is not None:
        if not math.isfinite(number) or number < 0:
            fail(f"--since {text!r} must be a time or a duration ago")
        return number
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        moment = None
    if moment is not None:
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    try:
        ago = parse_duration(value, "--since")
    except ValueError:
        fail(
            f"--since {text!r} is neither a time (2026-11-25T22:00:00Z, or POSIX seconds) "
            "nor a duration ago (30s, 15m, 2h, 1d)"
        )
    return max(0.0, float(server_now()) - ago)


def _print(data: dict[str, Any], wide: bool) -> None:
    totals = data["totals"]
    events = data["events"]
    click.echo(
        f"{len(events)} event{'' if len(events) == 1 else 's'}: "
        + ", ".join(f"{totals[k]} {k}" for k in ("ok", "warn", "fail", "pending", "info"))
    )
    if events:
        rows = [
            [
                e["verdict"], when(e["created_at"]), e["id"], e["type"] or "-",
                e["scope"] or "-", _seconds(e["notice"]), e["status"], e["summary"],
            ]
            for e in events
        ]  # fmt: skip
        columns = [
            Column("verdict"), Column("created", optional=3), Column("event", "key"),
            Column("type"), Column("scope", optional=2), Column("notice", optional=1),
            Column("status", optional=4), Column("what happened", "list"),
        ]  # fmt: skip
        table("Events", columns, rows, wide=wide)
    missed = [(e, v) for e in events for v in e["vms"] if v["verdict"] == "missed"]
    if missed:
        rows = [[v["vm"], e["id"], v["note"]] for e, v in missed]
        columns = [Column("VM"), Column("event", "key"), Column("why", "list")]
        table("Missed (never saw the event before it started)", columns, rows, wide=wide)
    if data["stopped_polling"]:
        rows = [
            [p["vm"], when(p["last_poll"]), _seconds(p["silent_for"]), p["api_version"] or "-"]
            for p in data["stopped_polling"]
        ]
        columns = [Column("VM"), Column("last poll"), Column("silent"), Column("api-version")]
        table("Stopped polling", columns, rows, wide=wide)
    if data["unlisted_approvals"]:
        rows = [[a["vm"], a["event_id"], when(a["at"])] for a in data["unlisted_approvals"]]
        columns = [Column("VM"), Column("event", "key"), Column("at")]
        table("Approved events that do not list them", columns, rows, wide=wide)
    _print_faults(data, wide)
    for name in ("detection", "approval"):
        stats = data[name]
        if stats["count"]:
            click.echo(
                f"{name} latency: {stats['count']} values, median {_seconds(stats['median'])}, "
                f"p90 {_seconds(stats['p90'])}, max {_seconds(stats['max'])}"
            )


def _print_faults(data: dict[str, Any], wide: bool) -> None:
    """How each VM coped with injected endpoint faults (``forewarn fault``), if any."""
    faults = data.get("faults") or []
    if faults:
        rows = [[f["vm"], f["note"], ", ".join(f["missed"]) or "-"] for f in faults]
        columns = [Column("VM"), Column("how it coped", "list"), Column("missed", "list")]
        table("Endpoint faults and how each VM coped", columns, rows, wide=wide)


@click.command()
@click.option(
    "--since",
    default=None,
    help="Only events created since then: 2026-11-25T22:00:00Z, POSIX seconds, or a "
    "duration ago on the server's clock (30s, 15m, 2h, 1d).",
)
@click.option(
    "--stale-after",
    type=float,
    default=30.0,
    callback=finite,
    help="A VM silent this long (server clock seconds) stopped polling.",
)
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the report as a self-contained HTML page (timelines, histograms).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
@click.option("--exit-code", is_flag=True, help="Exit 1 when an event's verdict is fail.")
@click.option("--wide", is_flag=True, help="Every column at full width.")
@click.pass_context
def report(
    ctx: click.Context,
    since: str | None,
    stale_after: float,
    html_file: Path | None,
    as_json: bool,
    exit_code: bool,
    wide: bool,
) -> None:
    """How the fleet reacted to each event: who saw it when, who approved it before
    NotBefore, who missed it, who stopped polling, and approvals by VMs not listed."""
    if stale_after < 0:
        fail("--stale-after must not be negative")
    api = ControlApi(ctx)
    params: dict[str, Any] = {"stale_after": stale_after}
    if since is not None:
        params["since"] = parse_since(since, lambda: api.call("GET", "/api/v1/clock")["now"])
    data = api.call("GET", "/api/v1/reactions", params=params)
    if html_file is not None:
        page = api.call("GET", "/api/v1/report", params=params)
        try:
            html_file.write_text(page, encoding="utf-8")
        except OSError as exc:
            fail(f"cannot write {html_file}: {exc.strerror or exc}")
    if as_json:
        print_json(data)
    else:
        _print(data, wide)
        if html_file is not None:
            click.echo(f"HTML report written to {html_file}")
    if exit_code and data["totals"]["fail"]:
        ctx.exit(1)
