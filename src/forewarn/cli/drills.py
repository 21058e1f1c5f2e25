"""Repeatable drills from the command line: ``fleet reset`` and ``fault add|list|clear``.

Both speak to a running server's control API (``/api/v1/fleet/reset``,
``/api/v1/faults``); the server checks every input and this prints its answer.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import click

from forewarn.cli.api import control_client
from forewarn.cli.durations import DURATION
from forewarn.cli.errors import finite
from forewarn.cli.output import Column, print_json, table
from forewarn.controlapi import segment

__all__ = ["fault", "reset"]

_JSON = {"Content-Type": "application/json"}


@click.command(
    help="Reset the fleet of a running server for the next drill: every event, operation "
    "and rollout gone, deleted (evicted, scaled-in) VMs back, the history kept with a "
    "fleet.reset entry; every VM then sees a new document with a higher incarnation."
)
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.pass_context
def reset(ctx: click.Context, as_json: bool) -> None:
    out = control_client(ctx).call("POST", "/api/v1/fleet/reset", json={})
    if as_json:
        print_json(out)
        return
    restored = out["restored_vms"]
    click.echo(
        f"fleet reset: {out['events']} event(s), {out['operations']} operation(s) "
        f"({out['live_operations']} under way) and {out['rollouts']} rollout(s) cleared; "
        + (f"{len(restored)} VM(s) back: {', '.join(restored)}" if restored else "no VM to restore")
    )
    # to the microsecond below (never after the reset: what began at it is the next drill's)
    at = datetime.fromtimestamp(math.floor(out["at"] * 1e6) / 1e6, UTC)
    since = at.isoformat(timespec="microseconds").replace("+00:00", "Z")
    click.echo(f"the next drill's report: forewarn report --since {since}")


@click.group(
    help="Make the metadata endpoint fail like the real one: error statuses, latency, "
    "time-outs, connection resets, a co-tenant eating the rate budget."
)
def fault() -> None:
    pass


_COLUMNS = [
    Column("Id", "key"), Column("Kind"), Column("On", "phrase"), Column("What", "phrase"),
    Column("Window", "phrase"), Column("Share", optional=1), Column("Hits"),
]  # fmt: skip


def _row(f: dict[str, Any]) -> list[str]:
    on = f"vm {f['vm']}" if f["vm"] else (f"scope {f['scope']}" if f["scope"] else "fleet")
    what = {
        "status": f"HTTP {f['status']}",
        "latency": f"+{f['latency_seconds']} s",
        "cotenant": f"co-tenant {f['rate']} req/s",
    }.get(f["kind"], f["kind"])
    ends, lasts = f["ends_at"], f.get("duration_seconds")
    if lasts is None and ends is not None:  # a server before platform-time windows
        lasts = ends - f["starts_at"]
    window = "until cleared" if lasts is None else f"{lasts:g} s"
    return [f["id"], f["kind"], on, what, window, f"{f['share']:g}", str(f["hits"])]


@fault.command(
    "add",
    help="Inject a fault: KIND is status (with --status), latency (with --latency), timeout "
    "(accept and never answer), reset (drop the connection) or cotenant (with --rate). "
    "On --vm, --scope, or (neither) the whole fleet.",
)
@click.argument("kind", type=click.Choice(["status", "latency", "timeout", "reset", "cotenant"]))
@click.option("--vm", default=None, help="Only this VM.")
@click.option("--scope", default=None, help="Only the VMs of this scope.")
@click.option("--status", type=click.Choice(["410", "429", "500", "503"]), default=None,
              help="The status a status fault answers (with the endpoint's body).")  # fmt: skip
@click.option(
    "--for",
    "duration",
    type=DURATION,
    default=None,
    help="Lasts this long in platform time, divided by the server's --time-scale like "
    "every platform duration (70, 70s, 5m, PT5M; default: until cleared).",
)
@click.option("--after", type=DURATION, default=0.0,
              help="Starts this long from now, in platform time (as --for).")  # fmt: skip
@click.option("--share", type=float, default=1.0, callback=finite,
              help="Share of the matching requests hit, over 0 up to 1.")  # fmt: skip
@click.option("--latency", type=DURATION, default=None,
              help="Real time added to each answer (latency faults): 2, 2s, 0.5.")  # fmt: skip
@click.option(
    "--rate",
    type=float,
    default=None,
    callback=finite,
    help="Requests/s a co-tenant makes of the VM's 5 (cotenant faults).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the fault as JSON.")
@click.pass_context
def add(
    ctx: click.Context, kind: str, vm: str | None, scope: str | None, status: str | None,
    duration: float | None, after: float, share: float, latency: float | None,
    rate: float | None, as_json: bool,
) -> None:  # fmt: skip
    body = {
        "kind": kind, "vm": vm, "scope": scope,
        "status": None if status is None else int(status),
        "duration_seconds": duration, "after_seconds": after, "share": share,
        "latency_seconds": latency, "rate": rate,
    }  # fmt: skip
    out = control_client(ctx).call("POST", "/api/v1/faults", json=body)
    if as_json:
        print_json(out)
        return
    click.echo(f"{out['id']}: {' '.join(_row(out)[1:5])}")


@fault.command("list", help="The injected faults not over yet, with the requests each hit.")
@click.option("--json", "as_json", is_flag=True, help="Print them as JSON.")
@click.pass_context
def list_(ctx: click.Context, as_json: bool) -> None:
    out = control_client(ctx).call("GET", "/api/v1/faults")
    if as_json:
        print_json(out)
    elif not out:
        click.echo("no fault injected: the endpoint answers faithfully")
    else:
        table("Injected endpoint faults", _COLUMNS, [_row(f) for f in out])


@fault.command("clear", help="Clear the faults named (default: every fault).")
@click.argument("ids", nargs=-1)
@click.pass_context
def clear(ctx: click.Context, ids: tuple[str, ...]) -> None:
    api = control_client(ctx)
    if not ids:
        gone = api.call("DELETE", "/api/v1/faults", headers=_JSON)
        click.echo(f"cleared {len(gone)} fault(s)")
        return
    for fault_id in ids:
        api.call("DELETE", f"/api/v1/faults/{segment(fault_id)}", headers=_JSON)
        click.echo(f"cleared {fault_id}")
