"""The commands that drive a running server through its control API."""

from __future__ import annotations

import click
import msgspec

from ..contract import SUPPORTED_VERSIONS
from ..fabric import OperationKind
from .api import ControlApi
from .errors import finite
from .output import print_json, table, when

__all__ = ["COMMANDS"]


@click.command(
    help="Start OPERATION on TARGET (a VM, a host, or a scope to walk its update domains).\n\n"
    "OPERATION is one of: " + ", ".join(k.value for k in OperationKind) + "."
)
@click.argument(
    "operation", metavar="OPERATION", type=click.Choice([k.value for k in OperationKind])
)
@click.argument("target")
@click.option(
    "--notice",
    type=float,
    default=None,
    callback=finite,
    help="Notice in seconds (default: minimum).",
)
@click.option("--description", default=None, help="Description shown in the event.")
@click.option("--duration", type=int, default=None, help="DurationInSeconds shown in the event.")
@click.option("--json", "as_json", is_flag=True, help="Print the operation as JSON.")
@click.pass_context
def trigger(
    ctx: click.Context,
    operation: str,
    target: str,
    notice: float | None,
    description: str | None,
    duration: int | None,
    as_json: bool,
) -> None:
    """Start OPERATION on TARGET (a VM, a host, or a scope to walk its update domains)."""
    body = {
        "kind": operation,
        "target": target,
        "notice_seconds": notice,
        "description": description,
        "duration_seconds": duration,
    }
    op = ControlApi(ctx).call(
        "POST", "/api/v1/operations", json={k: v for k, v in body.items() if v is not None}
    )
    if as_json:
        print_json(op)
        return
    click.echo(
        f"{op['id']}: {op['kind']} on {op['target']} ({op['state']}), "
        f"NotBefore {when(op['not_before'])} UTC, events {', '.join(op['event_ids']) or 'none'}"
    )
    if op["unnotified"]:
        click.echo(
            f"  no notice for {', '.join(op['unnotified'])}: Scheduled Events are off in their "
            "scope (no request from it yet, or terminate notifications disabled)"
        )


@click.command()
@click.option("--as", "as_vm", default=None, help="Show the document this VM gets.")
@click.option("--api-version", default=None, help=f"With --as (default {SUPPORTED_VERSIONS[-1]}).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def events(ctx: click.Context, as_vm: str | None, api_version: str | None, as_json: bool) -> None:
    """List live events (or, with --as, the document one VM sees)."""
    if api_version is not None and as_vm is None:
        raise click.UsageError("--api-version needs --as VM (it picks how that VM sees events)")
    api = ControlApi(ctx)
    if as_vm is not None:
        document = api.call(
            "GET",
            f"/api/v1/documents/{as_vm}",
            params={"api-version": api_version or SUPPORTED_VERSIONS[-1]},
        )
        if as_json:
            print_json(document)
            return
        table(
            f"{as_vm}: DocumentIncarnation {document['DocumentIncarnation']}",
            ["EventId", "Status", "Type", "Resources", "NotBefore"],
            [
                [
                    e["EventId"],
                    e["EventStatus"],
                    e["EventType"],
                    ", ".join(e["Resources"]),
                    e["NotBefore"] or "-",
                ]
                for e in document["Events"]
            ],
        )
        return
    listing = api.call("GET", "/api/v1/events")
    if as_json:
        print_json(listing)
        return
    table(
        "Live events",
        ["Id", "Scope", "Status", "Type", "Resources", "NotBefore", "Approved"],
        [
            [
                e["id"],
                e["scope"],
                e["status"],
                e["type"],
                ", ".join(e["resources"]),
                when(e["not_before"]),
                e["approved_by"] or "-",
            ]
            for e in listing
        ],
    )


def _event_command(action: str, help_text: str) -> click.Command:
    @click.argument("event_id")
    @click.pass_context
    def command(ctx: click.Context, event_id: str) -> None:
        result = ControlApi(ctx).call("POST", f"/api/v1/events/{event_id}/{action}")
        click.echo(f"{result['id']}: {result['status']}")

    command.__doc__ = help_text
    return click.command(name=action)(command)


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("seconds", type=float, callback=finite)
@click.pass_context
def advance(ctx: click.Context, seconds: float) -> None:
    """Advance a virtual clock by SECONDS, firing every timer that comes due."""
    clock = ControlApi(ctx).call("POST", "/api/v1/clock/advance", json={"seconds": seconds})
    click.echo(f"clock: {clock['iso']}")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def topology(ctx: click.Context, as_json: bool) -> None:
    """Scopes and VMs of the running server."""
    data = ControlApi(ctx).call("GET", "/api/v1/topology")
    if as_json:
        print_json(data)
        return
    rows = [
        [
            vm["name"],
            s["id"],
            s["kind"],
            vm["host"],
            str(vm["update_domain"]),
            str(vm["fault_domain"]),
            vm["address"],
            vm["status"],
        ]
        for s in data["scopes"]
        for vm in s["vms"]
    ]
    table("Fleet", ["VM", "Scope", "Kind", "Host", "UD", "FD", "Address", "Status"], rows)


@click.command()
@click.option("--limit", type=int, default=50)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def history(ctx: click.Context, limit: int, as_json: bool) -> None:
    """The append-only history of every transition."""
    entries = ControlApi(ctx).call("GET", "/api/v1/history", params={"last": limit})
    if as_json:
        print_json(entries)
        return
    table(
        "History",
        ["#", "At (UTC)", "Kind", "Scope", "Event", "Detail"],
        [
            [
                str(h["seq"]),
                when(h["at"]),
                h["kind"],
                h["scope_id"] or "-",
                h["event_id"] or "-",
                msgspec.json.encode(h["detail"]).decode(),
            ]
            for h in entries
        ],
    )


COMMANDS: tuple[click.Command, ...] = (
    trigger,
    events,
    _event_command(
        "approve", "Approve EVENT_ID as the operator (it starts when all are approved)."
    ),
    _event_command("start", "Start EVENT_ID's operation now."),
    _event_command("cancel", "Cancel a Scheduled EVENT_ID (no impact)."),
    _event_command("complete", "End a Started EVENT_ID now."),
    advance,
    topology,
    history,
)
